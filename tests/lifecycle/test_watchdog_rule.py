"""The watchdog's decision rule, cooldown and grace, on probes and real /metrics text."""

from __future__ import annotations

import threading

import torch
from prometheus_client import generate_latest

from cosyvoice.lifecycle.manager import ModelManager, ModelSpec
from cosyvoice.lifecycle.watchdog import Probe, Watchdog, WatchdogConfig, parse_metrics
from cosyvoice.server.health import AppState
from cosyvoice.server.metrics import build_registry
from cosyvoice.settings import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder(Watchdog):
    """A Watchdog whose restart is recorded instead of running restart.sh."""

    def __init__(self, cfg, probes, clock):
        self.probes = iter(probes)
        super().__init__(cfg, probe_fn=lambda: next(self.probes), clock=clock)
        self.reasons: list[str] = []

    def restart(self, reason: str) -> int:
        self.reasons.append(reason)
        self.last_restart, self.failed_polls = self.clock(), 0
        return 0


CFG = WatchdogConfig(failures=3, gpu_fraction=0.9, slow_count=3, cooldown_s=300, grace_s=0)
DOWN = Probe(False, "timed out")
UP = Probe(True, gpu_fraction=0.5, slow_streak=0)


def test_restarts_after_n_failed_polls_only():
    clock = Clock()
    wd = Recorder(CFG, [DOWN, DOWN, UP, DOWN, DOWN, DOWN], clock)
    assert [wd.step() for _ in range(6)] == [False] * 5 + [True]
    assert "3 liveness polls" in wd.reasons[0]


def test_gpu_rule_needs_both_high_memory_and_slow_streak():
    probes = [Probe(True, gpu_fraction=0.95, slow_streak=2),   # slow streak too short
              Probe(True, gpu_fraction=0.80, slow_streak=5),   # memory fine
              Probe(True, gpu_fraction=None, slow_streak=9),   # no GPU at all
              Probe(True, gpu_fraction=0.93, slow_streak=3)]
    wd = Recorder(CFG, probes, Clock())
    assert [wd.step() for _ in range(4)] == [False, False, False, True]
    assert "93%" in wd.reasons[0] and "3 slow" in wd.reasons[0]


def test_cooldown_and_grace_hold_restarts_back():
    clock = Clock()
    cfg = WatchdogConfig(failures=1, cooldown_s=300, grace_s=60)
    wd = Recorder(cfg, [DOWN] * 4, clock)
    assert wd.step() is False  # within start-up grace
    clock.now += 61
    assert wd.step() is True
    clock.now += 100
    assert wd.step() is False  # cooldown
    clock.now += 201
    assert wd.step() is True
    assert len(wd.reasons) == 2


def test_parse_metrics_reads_the_apps_own_exposition():
    settings = Settings(slow_request_s=0.01)
    mgr = ModelManager("cpu", [ModelSpec("lin", lambda d: torch.nn.Linear(4, 4))])
    state = AppState()
    state.loading_done.set()
    for _ in range(2):
        with state.requests.track("clone"):
            threading.Event().wait(0.02)
    text = generate_latest(build_registry(mgr, state, settings)).decode()
    fraction, streak = parse_metrics(text)
    assert streak == 2
    assert fraction is None or 0.0 <= fraction <= 1.0  # None without a GPU
    gpu_text = ('cosyvoice_gpu_memory_used_bytes{gpu="0",name="H"} 95.0\n'
                'cosyvoice_gpu_memory_total_bytes{gpu="0",name="H"} 100.0\n'
                'cosyvoice_gpu_memory_used_bytes{gpu="1",name="H"} 10.0\n'
                'cosyvoice_gpu_memory_total_bytes{gpu="1",name="H"} 100.0\n')
    assert parse_metrics(gpu_text) == (0.95, 0)
