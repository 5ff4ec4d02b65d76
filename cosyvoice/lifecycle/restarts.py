"""The record of hard restarts, and launching ``restart.sh`` so that it outlives the app.

``restart.sh`` appends one line per restart to ``restarts.log`` beside the pidfile:
``<unix time> <reason> <old pid or ->``. The file survives process lifetimes, so
``/metrics`` can count restarts and the UI can enforce a cooldown across them.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from cosyvoice.settings import ROOT, Settings
from cosyvoice.state_files import read_text

logger = logging.getLogger(__name__)

RESTART_SCRIPT = ROOT / "restart.sh"
REASONS = ("button", "api", "watchdog", "cron", "manual")


@dataclass(frozen=True)
class RestartEntry:
    when: float
    reason: str
    old_pid: int | None


class RestartLog:
    """Reads (and, for tests and tools, appends to) ``<run dir>/restarts.log``."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    @classmethod
    def for_settings(cls, settings: Settings) -> RestartLog:
        return cls(Path(settings.pidfile).parent / "restarts.log")

    def entries(self) -> list[RestartEntry]:
        """Every restart recorded; lines that do not parse are skipped, a file that is not
        UTF-8 text (or not a file) is set aside."""
        text = read_text(self.path, "restart log")
        return [e for e in map(_parse, (text or "").splitlines()) if e is not None]

    def record(self, reason: str, old_pid: int | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(f"{int(time.time())} {reason} {old_pid or '-'}\n")

    def count_by_reason(self) -> dict[str, int]:
        return dict(Counter(e.reason for e in self.entries()))

    def last_time(self) -> float | None:
        entries = self.entries()
        return entries[-1].when if entries else None


def _parse(line: str) -> RestartEntry | None:
    parts = line.split()
    if len(parts) < 2:
        return None
    try:
        when = float(parts[0])
    except ValueError:
        return None
    pid = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
    return RestartEntry(when, parts[1], pid)


def restart_env(settings: Settings) -> dict[str, str]:
    """Environment telling restart.sh (and run.sh after it) where this instance lives."""
    env = dict(os.environ)
    env.update({
        "COSYVOICE_PIDFILE": str(Path(settings.pidfile).resolve()),
        "COSYVOICE_OUTPUTS_DIR": str(Path(settings.outputs_dir).resolve()),
        "COSYVOICE_CACHE_DIR": str(Path(settings.cache_dir).resolve()),
        "COSYVOICE_LOG_DIR": str(Path(settings.log_dir).resolve()),
        "COSYVOICE_PORT": str(settings.port),
        "COSYVOICE_DRAIN_TIMEOUT_S": str(settings.drain_timeout_s),
    })
    return env


def launch_restart(settings: Settings, keep_outputs: bool, reason: str = "button",
                   script: Path = RESTART_SCRIPT) -> subprocess.Popen:
    """Start ``restart.sh`` detached (own session, output to logs/restart.log).

    It survives this process: restart.sh sends us SIGTERM, waits for the drain and
    starts the new instance with the same arguments.
    """
    log_dir = Path(settings.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    args = ["bash", str(script), "--reason", reason]
    if keep_outputs:
        args.append("--keep-outputs")
    with open(log_dir / "restart.log", "ab") as log:
        proc = subprocess.Popen(args, cwd=str(ROOT), env=restart_env(settings),
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True)
    logger.warning("restart requested (%s, keep outputs: %s): restart.sh pid %d", reason,
                   keep_outputs, proc.pid)
    return proc
