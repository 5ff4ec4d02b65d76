"""The record of hard restarts, and launching ``restart.sh`` so that it outlives the app.

``restart.sh`` appends one line per restart to ``restarts.log`` beside the pidfile:
``<unix time> <reason> <old pid or -> <stop s> <relaunch s>``: when it began, why, the
process it stopped, how long that one took from SIGTERM to gone, and how long the rest
took, from the old process gone (or from the start, when none ran) until the new one
answered ready (``-`` when it never did). The file survives process lifetimes, so
``/metrics`` can count restarts, the UI can enforce a cooldown across them, and a drain's
``Retry-After`` learns from them how long a restart takes on this machine
(:meth:`RestartLog.relaunch_estimate_s`).
"""

from __future__ import annotations

import logging
import os
import statistics
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
LEARN_FROM = 5  # a relaunch is projected as the median of this many recent ones


@dataclass(frozen=True)
class RestartEntry:
    when: float
    reason: str
    old_pid: int | None
    stop_s: float | None = None  # SIGTERM → the old process gone
    relaunch_s: float | None = None  # the old process gone → the new one ready


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

    def record(self, reason: str, old_pid: int | None = None, stop_s: float | None = None,
               relaunch_s: float | None = None) -> None:
        """Append a line as restart.sh writes it (for tests and tools)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(f"{int(time.time())} {reason} {old_pid or '-'} {_seconds(stop_s)} "
                    f"{_seconds(relaunch_s)}\n")

    def relaunch_estimate_s(self, last: int = LEARN_FROM) -> float | None:
        """How long the next restart should take from the old process's exit until the new
        one is ready: the median of the last ``last`` restarts that came up, or None when
        none is recorded."""
        times = [e.relaunch_s for e in self.entries() if e.relaunch_s is not None]
        return statistics.median(times[-last:]) if times else None

    def count_by_reason(self) -> dict[str, int]:
        return dict(Counter(e.reason for e in self.entries()))

    def last_time(self) -> float | None:
        entries = self.entries()
        return entries[-1].when if entries else None


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _duration(parts: list[str], i: int) -> float | None:
    """Field ``i`` as seconds, or None when absent, ``-`` or not a sane duration."""
    try:
        value = float(parts[i])
    except (IndexError, ValueError):
        return None
    return value if 0 <= value < 86400 else None


def _parse(line: str) -> RestartEntry | None:
    parts = line.split()
    if len(parts) < 2:
        return None
    try:
        when = float(parts[0])
    except ValueError:
        return None
    pid = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
    return RestartEntry(when, parts[1], pid, _duration(parts, 3), _duration(parts, 4))


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
