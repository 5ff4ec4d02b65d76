"""/metrics exposition from a real ModelManager, tracker and restart log (no server)."""

from __future__ import annotations

import pytest
import torch
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cosyvoice.errors import TextError
from cosyvoice.lifecycle.manager import ModelManager, ModelSpec
from cosyvoice.lifecycle.restarts import RestartLog
from cosyvoice.server.health import AppState
from cosyvoice.server.metrics import build_registry
from cosyvoice.settings import Settings


def _samples(registry) -> dict[tuple[str, tuple], float]:
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


@pytest.fixture
def parts(tmp_path):
    settings = Settings(pidfile=tmp_path / "run" / "app.pid")
    mgr = ModelManager("cpu", [ModelSpec("lin", lambda d: torch.nn.Linear(64, 64)),
                               ModelSpec("opt", lambda d: torch.nn.Linear(2, 2), required=False)])
    state = AppState()
    return settings, mgr, state


def test_requests_models_memory_and_restarts(parts):
    settings, mgr, state = parts
    mgr.load("lin")
    state.loading_done.set()
    with state.requests.track("preset"):
        pass
    with pytest.raises(TextError), state.requests.track("clone"):
        raise TextError("empty text")
    log = RestartLog.for_settings(settings)
    log.record("button", 123)
    log.record("watchdog")
    log.record("button", 456)
    s = _samples(build_registry(mgr, state, settings, queue_depth=lambda: 3))
    assert s[("cosyvoice_requests_total", (("mode", "preset"), ("outcome", "ok")))] == 1
    assert s[("cosyvoice_requests_total", (("mode", "clone"), ("outcome", "rejected")))] == 1
    assert s[("cosyvoice_request_duration_seconds_count", (("mode", "preset"),))] == 1
    assert s[("cosyvoice_queue_depth", ())] == 3
    assert s[("cosyvoice_in_flight_requests", ())] == 0
    assert s[("cosyvoice_ready", ())] == 1 and s[("cosyvoice_draining", ())] == 0
    assert s[("cosyvoice_model_state", (("model", "lin"), ("state", "READY")))] == 1
    assert s[("cosyvoice_model_state", (("model", "opt"), ("state", "UNLOADED")))] == 1
    lin_bytes = s[("cosyvoice_model_memory_bytes", (("device", "cpu"), ("model", "lin")))]
    assert lin_bytes == pytest.approx((64 * 64 + 64) * 4, rel=0.05)
    assert s[("cosyvoice_restarts_total", (("reason", "button"),))] == 2
    assert s[("cosyvoice_restarts_total", (("reason", "watchdog"),))] == 1
    assert s[("cosyvoice_process_rss_bytes", ())] > 50 * 2**20
    assert ("cosyvoice_torch_cuda_allocated_bytes", ()) in s


def test_draining_shows_not_ready(parts):
    settings, mgr, state = parts
    state.loading_done.set()
    state.draining.set()
    s = _samples(build_registry(mgr, state, settings))
    assert s[("cosyvoice_ready", ())] == 0 and s[("cosyvoice_draining", ())] == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_readings_per_device(parts):
    settings, _, state = parts
    mgr = ModelManager("cuda", [ModelSpec("lin", lambda d: torch.nn.Linear(1024, 1024).to(d))])
    mgr.load("lin")
    s = _samples(build_registry(mgr, state, settings))
    used = {k: v for k, v in s.items() if k[0] == "cosyvoice_gpu_memory_used_bytes"}
    total = {k: v for k, v in s.items() if k[0] == "cosyvoice_gpu_memory_total_bytes"}
    assert used and len(used) == len(total)
    assert all(0 < v for v in total.values())
    assert s[("cosyvoice_torch_cuda_allocated_bytes", ())] >= 1024 * 1024 * 4
