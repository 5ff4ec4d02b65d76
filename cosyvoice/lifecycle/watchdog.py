"""Watchdog: a small separate process that restarts a hung or jammed app via restart.sh.

    python -m cosyvoice.lifecycle.watchdog [--url http://127.0.0.1:7860] [...]
    bash run.sh --watchdog          (starts it in the background, pidfile run/watchdog.pid)

Every ``interval_s`` it polls ``/health/live`` and ``/metrics``. It restarts the app

* when liveness fails ``failures`` polls in a row (hung, frozen or dead process), or
* when GPU memory is above ``gpu_fraction`` of the card *and* the last ``slow_count``
  syntheses were each slower than the app's ``slow_request_s`` (the seed's rule: VRAM
  fills, requests crawl).

A cooldown keeps it from looping, a start-up grace lets a starting app load, and every
poll that leads to a decision, and every action, is logged.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import logging.handlers
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cosyvoice.config import dataclass_from_dict
from cosyvoice.settings import ROOT, Settings

logger = logging.getLogger(__name__)


@dataclass
class WatchdogConfig:
    url: str = "http://127.0.0.1:7860"
    interval_s: float = 10.0
    timeout_s: float = 5.0
    failures: int = 3
    gpu_fraction: float = 0.9
    slow_count: int = 3
    cooldown_s: float = 300.0
    grace_s: float = 60.0
    restart_cmd: list[str] = field(
        default_factory=lambda: ["bash", str(ROOT / "restart.sh"), "--reason", "watchdog",
                                 "--keep-outputs"])
    restart_timeout_s: float = 600.0

    @classmethod
    def from_settings(cls, settings: Settings) -> WatchdogConfig:
        prefix = settings.root_path.rstrip("/")
        return cls(url=f"http://127.0.0.1:{settings.port}{prefix}",
                   interval_s=settings.watchdog_interval_s, failures=settings.watchdog_failures,
                   gpu_fraction=settings.watchdog_gpu_fraction,
                   slow_count=settings.watchdog_slow_count,
                   cooldown_s=settings.watchdog_cooldown_s)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WatchdogConfig:
        return dataclass_from_dict(cls, d)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Probe:
    """One poll: did liveness answer, and the few metric values the rule needs."""

    live: bool
    error: str = ""
    gpu_fraction: float | None = None  # max over GPUs of used / total
    slow_streak: int = 0


def parse_metrics(text: str) -> tuple[float | None, int]:
    """``(max GPU used/total, slow streak)`` from Prometheus text of the app's /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    used: dict[str, float] = {}
    total: dict[str, float] = {}
    streak = 0
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "cosyvoice_gpu_memory_used_bytes":
                used[s.labels.get("gpu", "")] = s.value
            elif s.name == "cosyvoice_gpu_memory_total_bytes":
                total[s.labels.get("gpu", "")] = s.value
            elif s.name == "cosyvoice_slow_request_streak":
                streak = int(s.value)
    fractions = [used[g] / total[g] for g in used if total.get(g)]
    return (max(fractions) if fractions else None), streak


def _get(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def probe(cfg: WatchdogConfig) -> Probe:
    """Poll liveness, then metrics; any failure of liveness is a failed poll."""
    try:
        _get(cfg.url + "/health/live", cfg.timeout_s)
    except (OSError, urllib.error.URLError) as e:
        return Probe(False, f"{type(e).__name__}: {e}")
    try:
        fraction, streak = parse_metrics(_get(cfg.url + "/metrics", cfg.timeout_s).decode())
    except (OSError, ValueError) as e:
        logger.warning("metrics unreadable (%s); judging on liveness only", e)
        return Probe(True)
    return Probe(True, gpu_fraction=fraction, slow_streak=streak)


class Watchdog:
    """The decision rule and its memory (failure count, last restart); I/O injected."""

    def __init__(self, cfg: WatchdogConfig, probe_fn: Callable[[], Probe] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.probe_fn = probe_fn or (lambda: probe(cfg))
        self.clock = clock
        self.failed_polls = 0
        self.started = clock()
        self.last_restart: float | None = None
        self.restarts = 0

    def verdict(self, p: Probe) -> str | None:
        """Update the failure count from one probe; the reason to restart, if any."""
        if not p.live:
            self.failed_polls += 1
            logger.warning("liveness failed (%d/%d): %s", self.failed_polls, self.cfg.failures,
                           p.error)
            if self.failed_polls >= self.cfg.failures:
                return f"no answer to {self.failed_polls} liveness polls in a row ({p.error})"
            return None
        if self.failed_polls:
            logger.info("liveness back after %d failed poll(s)", self.failed_polls)
        self.failed_polls = 0
        if (p.gpu_fraction is not None and p.gpu_fraction > self.cfg.gpu_fraction
                and p.slow_streak >= self.cfg.slow_count):
            return (f"GPU memory at {p.gpu_fraction:.0%} (> {self.cfg.gpu_fraction:.0%}) with "
                    f"{p.slow_streak} slow syntheses in a row")
        return None

    def blocked(self) -> str | None:
        """Why a restart may not happen now (start-up grace or cooldown), else None."""
        now = self.clock()
        since = now - (self.last_restart if self.last_restart is not None else self.started)
        if self.last_restart is None and since < self.cfg.grace_s:
            return f"start-up grace ({self.cfg.grace_s - since:.0f} s left)"
        if self.last_restart is not None and since < self.cfg.cooldown_s:
            return f"cooldown ({self.cfg.cooldown_s - since:.0f} s left)"
        return None

    def step(self) -> bool:
        """One poll; True when it ran restart.sh."""
        reason = self.verdict(self.probe_fn())
        if reason is None:
            return False
        why_not = self.blocked()
        if why_not:
            logger.warning("would restart (%s) but holding off: %s", reason, why_not)
            return False
        self.restart(reason)
        return True

    def restart(self, reason: str) -> int:
        logger.error("restarting the app: %s; running %s", reason, shlex.join(self.cfg.restart_cmd))
        t0 = self.clock()
        try:
            done = subprocess.run(self.cfg.restart_cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True,
                                  timeout=self.cfg.restart_timeout_s)
            rc, tail = done.returncode, (done.stdout + done.stderr).strip().splitlines()[-3:]
        except subprocess.TimeoutExpired:
            rc, tail = -1, [f"restart command ran past {self.cfg.restart_timeout_s:.0f} s"]
        self.last_restart, self.failed_polls = self.clock(), 0
        self.restarts += 1
        log = logger.info if rc == 0 else logger.error
        log("restart command exited %d after %.1f s: %s", rc, self.clock() - t0,
            " | ".join(tail))
        return rc

    def run(self, stop: threading.Event | None = None) -> None:
        stop = stop or threading.Event()
        logger.info("watchdog watching %s every %.0f s: %s", self.cfg.url, self.cfg.interval_s,
                    self.cfg.to_dict())
        while not stop.is_set():
            self.step()
            stop.wait(self.cfg.interval_s)


def build_parser(base: WatchdogConfig) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cosyvoice.lifecycle.watchdog",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for f in dataclasses.fields(WatchdogConfig):
        value = getattr(base, f.name)
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, list):
            p.add_argument(flag, default=shlex.join(value), help="command line (shell words)")
        else:
            p.add_argument(flag, type=type(value), default=value)
    p.add_argument("--pidfile", default=str(Path(Settings.from_env().pidfile).parent
                                            / "watchdog.pid"))
    p.add_argument("--log-file", default=str(Path(Settings.from_env().log_dir) / "watchdog.log"))
    return p


def _setup_logging(path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(levelname)s watchdog: %(message)s")
    handlers: list[logging.Handler] = [
        logging.handlers.RotatingFileHandler(path, maxBytes=5 * 2**20, backupCount=2,
                                             encoding="utf-8"),
        logging.StreamHandler(sys.stderr)]
    for h in handlers:
        h.setFormatter(fmt)
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.handlers[:] = handlers


def main(argv: list[str] | None = None) -> int:
    from cosyvoice.lifecycle.pidfile import PidFile

    ns = build_parser(WatchdogConfig.from_settings(Settings.from_env())).parse_args(argv)
    values = {f.name: getattr(ns, f.name) for f in dataclasses.fields(WatchdogConfig)}
    values["restart_cmd"] = shlex.split(values["restart_cmd"])
    values["url"] = values["url"].rstrip("/")
    cfg = WatchdogConfig.from_dict(values)
    _setup_logging(ns.log_file)
    pidfile = PidFile(ns.pidfile)
    if not pidfile.acquire():
        logger.error("a watchdog already runs (pid %s, %s)", pidfile.read_pid(), ns.pidfile)
        return 1
    stop = threading.Event()
    import signal

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        Watchdog(cfg).run(stop)
    finally:
        pidfile.release()
        logger.info("watchdog stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
