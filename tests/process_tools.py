"""Helpers for tests that start, signal and wait for real processes (by pid, never by name)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT, get_json


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


@dataclass
class AppInstance:
    """One app started by ``restart.sh`` on its own port, with its pidfile, outputs, cache
    and logs under ``workdir``. Subclasses add their app flags (:meth:`extra_args`) and
    environment (:meth:`extra_env`)."""

    workdir: Path
    port: int

    ready_timeout_s = 180

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pidfile(self) -> Path:
        return self.workdir / "run" / "app.pid"

    @property
    def outputs(self) -> Path:
        return self.workdir / "outputs"

    @property
    def cache(self) -> Path:
        return self.workdir / "cache"

    def pid(self) -> int:
        return int(self.pidfile.read_text().strip())

    def extra_args(self) -> list[str]:
        return []

    def app_args(self) -> list[str]:
        w = self.workdir
        return ["--host", "127.0.0.1", "--port", str(self.port),
                "--outputs-dir", str(self.outputs), "--cache-dir", str(self.cache),
                "--log-dir", str(w / "logs"), "--pidfile", str(self.pidfile),
                *self.extra_args()]

    def extra_env(self) -> dict[str, str]:
        return {}

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "COSYVOICE_PIDFILE": str(self.pidfile),
                "READY_TIMEOUT": str(self.ready_timeout_s), **self.extra_env()}

    def restart_sh(self, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess:
        """``restart.sh *extra -- app_args``, as an operator would run it."""
        return subprocess.run(["bash", str(ROOT / "restart.sh"), *extra, "--", *self.app_args()],
                              cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def wait_new_ready(self, old_pid: int | None, timeout: float = 120) -> int:
        """The pid of a ready app other than ``old_pid``; on timeout, names restart.log."""
        try:
            return wait_ready(self.url, timeout, not_pid=old_pid)[0]
        except AssertionError as e:
            raise AssertionError(f"{e}; see {self.workdir / 'logs' / 'restart.log'}") from None

    def restarts(self) -> list[list[str]]:
        """The fields of each line of ``run/restarts.log``."""
        path = self.workdir / "run" / "restarts.log"
        return [ln.split() for ln in path.read_text().splitlines()] if path.exists() else []

    def stop(self) -> None:
        stop_by_pidfile(self.pidfile)
