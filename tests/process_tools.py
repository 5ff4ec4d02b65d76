"""Helpers for tests that start, signal and wait for real processes (by pid, never by name)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.conftest import get_json


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def pid_in(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def live_pid(url: str) -> int | None:
    """The pid ``/health/live`` reports, or None when nothing answers."""
    try:
        status, body = get_json(url + "/health/live", timeout=2)
    except OSError:
        return None
    return body.get("pid") if status == 200 else None


def wait_ready(url: str, timeout: float, not_pid: int | None = None) -> tuple[int, float]:
    """Wait for ``/health/ready`` 200 from a process other than ``not_pid``: (pid, seconds)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            status, body = get_json(url + "/health/ready", timeout=2)
            if status == 200 and body.get("ready") and body.get("pid") != not_pid:
                return body["pid"], time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"{url} not ready (pid other than {not_pid}) after {timeout:.0f} s")


def stop_by_pidfile(pidfile: Path, timeout: float = 30.0) -> None:
    """SIGTERM the app named by ``pidfile``, only if its command line names that pidfile
    (so a recycled pid is never hit); SIGKILL after ``timeout``."""
    pid = pid_in(pidfile)
    if pid is None or str(pidfile) not in cmdline(pid):
        return
    os.kill(pid, signal.SIGCONT)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
