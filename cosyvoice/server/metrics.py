"""``GET /metrics`` in Prometheus text format (prometheus_client).

One custom collector reads everything at scrape time — request counts and latencies
from the :class:`~cosyvoice.lifecycle.drain.RequestTracker`, model states from the
ModelManager, memory from :mod:`cosyvoice.lifecycle.resources`, restarts from the
restart log that outlives the process — so nothing here has to be updated by hand.
Each app gets its own registry (no global default registry).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from cosyvoice.lifecycle import resources
from cosyvoice.lifecycle.drain import EngineStats
from cosyvoice.lifecycle.manager import ModelManager, ModelState
from cosyvoice.lifecycle.restarts import RestartLog
from cosyvoice.server.health import AppState, readiness
from cosyvoice.settings import Settings
from cosyvoice.state_files import set_aside_files

QueueDepthFn = Callable[[], int]


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


class AppCollector(Collector):
    """Everything ``/metrics`` reports about this process."""

    def __init__(self, manager: ModelManager, state: AppState, settings: Settings,
                 queue_depth: QueueDepthFn | None = None) -> None:
        self.manager = manager
        self.state = state
        self.settings = settings
        self.queue_depth = queue_depth or (lambda: 0)
        self.restart_log = RestartLog.for_settings(settings)

    def collect(self) -> Iterator[Metric]:
        yield from self._requests()
        yield from self._health()
        yield from self._models()
        yield from self._memory()
        yield from self._restarts()

    def _requests(self) -> Iterator[Metric]:
        snap = self.state.requests.snapshot()
        total = CounterMetricFamily("cosyvoice_requests", "Synthesis requests by mode and "
                                    "outcome (ok, rejected, refused, error, cancelled)",
                                    labels=["mode", "outcome"])
        for (mode, outcome), n in sorted(snap.outcomes.items()):
            total.add_metric([mode, outcome], n)
        yield total
        hist = HistogramMetricFamily("cosyvoice_request_duration_seconds",
                                     "Synthesis latency by mode", labels=["mode"])
        for mode, h in sorted(snap.latency.items()):
            hist.add_metric([mode], h.cumulative(), sum_value=h.total_s)
        yield hist
        yield from _engine_metrics(snap.engines)
        yield _gauge("cosyvoice_in_flight_requests", "Syntheses running now", snap.in_flight)
        yield _gauge("cosyvoice_queue_depth", "Requests waiting in the queue",
                     _safe_int(self.queue_depth))
        yield _gauge("cosyvoice_slow_request_streak",
                     f"Most recent syntheses in a row slower than "
                     f"{self.settings.slow_request_s:g} s",
                     self.state.requests.slow_streak(self.settings.slow_request_s))

    def _health(self) -> Iterator[Metric]:
        ok, _ = readiness(self.manager, self.state)
        yield _gauge("cosyvoice_ready", "1 when /health/ready answers 200", int(ok))
        yield _gauge("cosyvoice_draining", "1 while draining after SIGTERM",
                     int(self.state.draining.is_set()))
        yield _gauge("cosyvoice_uptime_seconds", "Seconds since this process started",
                     time.time() - self.state.started_at)
        yield _gauge("cosyvoice_files_set_aside", "Damaged state files this process renamed "
                     "away (listed in /health/ready)", len(set_aside_files()))

    def _models(self) -> Iterator[Metric]:
        states = GaugeMetricFamily("cosyvoice_model_state", "1 for the model's current state",
                                   labels=["model", "state"])
        memory = GaugeMetricFamily("cosyvoice_model_memory_bytes", "Memory held by the model",
                                   labels=["model", "device"])
        load = GaugeMetricFamily("cosyvoice_model_load_seconds", "Last load (with warm-up)",
                                 labels=["model"])
        for m in self.manager.states():
            for s in ModelState:
                states.add_metric([m["name"], s.value], int(m["state"] == s.value))
            memory.add_metric([m["name"], m["device"]], m["memory_bytes"])
            load.add_metric([m["name"]], m["load_seconds"])
        yield from (states, memory, load)

    def _memory(self) -> Iterator[Metric]:
        yield _gauge("cosyvoice_process_rss_bytes", "Resident set size of the app",
                     resources.rss_bytes())
        alloc = resources.cuda_allocator()
        yield _gauge("cosyvoice_torch_cuda_allocated_bytes", "torch.cuda.memory_allocated()",
                     alloc["allocated"])
        yield _gauge("cosyvoice_torch_cuda_reserved_bytes", "torch.cuda.memory_reserved()",
                     alloc["reserved"])
        used = GaugeMetricFamily("cosyvoice_gpu_memory_used_bytes", "NVML used memory",
                                 labels=["gpu", "name"])
        total = GaugeMetricFamily("cosyvoice_gpu_memory_total_bytes", "NVML total memory",
                                  labels=["gpu", "name"])
        own = GaugeMetricFamily("cosyvoice_gpu_process_memory_bytes",
                                "NVML memory used by this process", labels=["gpu", "name"])
        for g in resources.gpu_readings():
            labels = [str(g["index"]), g["name"]]
            used.add_metric(labels, g["used"])
            total.add_metric(labels, g["total"])
            own.add_metric(labels, g["process"])
        yield from (used, total, own)

    def _restarts(self) -> Iterator[Metric]:
        fam = CounterMetricFamily("cosyvoice_restarts", "Hard restarts by restart.sh, across "
                                  "process lifetimes, by reason", labels=["reason"])
        for reason, n in sorted(self.restart_log.count_by_reason().items()):
            fam.add_metric([reason], n)
        yield fam


def _engine_metrics(engines: dict[str, EngineStats]) -> Iterator[Metric]:
    """Per engine: latency and first-chunk histograms; LLM tokens, decode seconds and the
    tokens/s they give (engines with a token LLM, such as CosyVoice)."""
    latency = HistogramMetricFamily("cosyvoice_engine_request_duration_seconds",
                                    "Synthesis latency by engine (the engine's part)",
                                    labels=["engine"])
    first = HistogramMetricFamily("cosyvoice_engine_first_chunk_seconds",
                                  "Time to the engine's first audio chunk", labels=["engine"])
    tokens = CounterMetricFamily("cosyvoice_llm_tokens", "Speech tokens the engine's LLM "
                                 "decoded", labels=["engine"])
    seconds = CounterMetricFamily("cosyvoice_llm_decode_seconds", "Seconds the engine's LLM "
                                  "spent decoding speech tokens", labels=["engine"])
    rate = GaugeMetricFamily("cosyvoice_llm_tokens_per_second", "Speech tokens per second of "
                             "LLM decoding, over all requests so far", labels=["engine"])
    for name, st in sorted(engines.items()):
        latency.add_metric([name], st.latency.cumulative(), sum_value=st.latency.total_s)
        first.add_metric([name], st.first_chunk.cumulative(), sum_value=st.first_chunk.total_s)
        if st.llm_tokens:
            tokens.add_metric([name], st.llm_tokens)
            seconds.add_metric([name], st.llm_s)
            rate.add_metric([name], st.llm_tokens / max(st.llm_s, 1e-9))
    yield from (latency, first, tokens, seconds, rate)


def _safe_int(fn: QueueDepthFn) -> int:
    try:
        return int(fn())
    except Exception:  # a scrape must never fail on one reading
        return 0


def build_registry(manager: ModelManager, state: AppState, settings: Settings,
                   queue_depth: QueueDepthFn | None = None) -> CollectorRegistry:
    from prometheus_client import PlatformCollector, ProcessCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(AppCollector(manager, state, settings, queue_depth))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


def metrics_router(registry: CollectorRegistry) -> APIRouter:
    router = APIRouter(tags=["metrics"])

    @router.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return router


def gradio_queue_depth(demo) -> QueueDepthFn:
    """Waiting events of a Gradio Blocks queue (0 before the queue starts)."""

    def depth() -> int:
        queue = getattr(demo, "_queue", None)
        return len(queue) if queue is not None else 0

    return depth
