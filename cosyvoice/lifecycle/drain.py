"""In-flight request tracking and the graceful SIGTERM drain.

Every synthesis runs inside :meth:`RequestTracker.track`, which counts it (by mode and
outcome, with its latency). A request that the server's admission gate has accepted
(:meth:`RequestTracker.admitted`: running, or waiting for a slot) is *accepted work*; new
work is refused with a retryable :class:`BusyError` once the app is draining.

:class:`DrainingServer` turns the first SIGTERM / SIGINT into a drain: readiness goes
false, new work is refused, and the drain listeners (the gate) decide for each accepted
request whether it can finish within ``drain_timeout_s``: those that can are served,
the others are answered at once with a 503 whose Retry-After is the projected time
until the new process is ready (the kept work, the linger, the shutdown, and the
relaunch as the last restarts on this machine took: ``restarts.log``). At the deadline
anything still waiting is answered the same way. Then the server lingers briefly so that
clients can fetch the result files (until no request has arrived for 1.5 s, at most
``drain_linger_s``), and uvicorn shuts down and the process exits 0.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from cosyvoice.errors import BusyError, CosyVoiceError, ModelError, error_body
from cosyvoice.lifecycle import resources

logger = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
FIRST_CHUNK_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
DRAINING_WHY = "The server is restarting and no longer accepts new requests"
DEFAULT_SYNTHESIS_S = 10.0  # one synthesis, before any has finished to measure
SHUTDOWN_S = 2.0  # after the drain and linger: uvicorn's graceful shutdown, at most
# Before any restart is recorded: restart.sh and run.sh's steps before the new app starts
# (run.sh's idempotent setup checks start four Python tools), added to this process's own
# start-up time.
DEFAULT_LAUNCH_S = 15.0
# Set inside RequestTracker.admitted(): this thread's request was accepted by the gate
# before the drain began, so track() must not refuse it.
_ADMITTED: contextvars.ContextVar[bool] = contextvars.ContextVar("admitted", default=False)
OUTCOMES = ("ok", "rejected", "refused", "error", "cancelled")


@dataclass
class LatencyHistogram:
    """Latency counts per upper bound (non-cumulative); the last slot is +Inf."""

    bounds: tuple[float, ...] = LATENCY_BUCKETS
    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    total_s: float = 0.0

    def observe(self, seconds: float) -> None:
        slot = next((i for i, b in enumerate(self.bounds) if seconds <= b), len(self.bounds))
        self.counts[slot] += 1
        self.total_s += seconds

    def cumulative(self) -> list[tuple[str, int]]:
        """``[(le, count)]`` in Prometheus order, ending with ``("+Inf", total)``."""
        out, running = [], 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out

    def copy(self) -> LatencyHistogram:
        return LatencyHistogram(self.bounds, list(self.counts), self.total_s)


class HttpActivity:
    """When the last HTTP request arrived (``DrainGuard`` calls :meth:`seen`)."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def seen(self) -> None:
        with self._lock:
            self._last = time.monotonic()

    def quiet_for(self, since: float | None = None) -> float:
        """Seconds since the last request, or since ``since`` (monotonic) if later."""
        with self._lock:
            last = self._last if since is None else max(self._last, since)
        return time.monotonic() - last

    def wait_quiet(self, quiet_s: float, max_s: float, step: float = 0.05) -> float:
        """Block until no request arrived for ``quiet_s`` (counted from now at the
        earliest) or ``max_s`` passed; returns the seconds waited."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < max_s and self.quiet_for(since=t0) < quiet_s:
            time.sleep(step)
        return time.monotonic() - t0


@dataclass
class EngineStats:
    """One engine's finished syntheses: latency and first-chunk time (from the engine's
    start), and its LLM's speech tokens and decode seconds (engines with a token LLM)."""

    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    first_chunk: LatencyHistogram = field(
        default_factory=lambda: LatencyHistogram(FIRST_CHUNK_BUCKETS,
                                                 [0] * (len(FIRST_CHUNK_BUCKETS) + 1)))
    llm_tokens: int = 0
    llm_s: float = 0.0

    def copy(self) -> EngineStats:
        return EngineStats(self.latency.copy(), self.first_chunk.copy(), self.llm_tokens,
                           self.llm_s)


@dataclass
class TrackerSnapshot:
    in_flight: int
    outcomes: dict[tuple[str, str], int]
    latency: dict[str, LatencyHistogram]
    engines: dict[str, EngineStats] = field(default_factory=dict)


class RequestTracker:
    """Counts syntheses in flight and finished; refuses new ones while draining."""

    def __init__(self, draining: threading.Event | None = None, recent: int = 64) -> None:
        self.draining = draining if draining is not None else threading.Event()
        self._cond = threading.Condition()
        self._in_flight = 0
        self._accepted = 0  # admitted by a gate: waiting for a slot or running
        self._drain_listeners: list[Callable[[float], None]] = []
        self._drain_started: float | None = None  # monotonic
        self._drain_deadline: float | None = None  # monotonic
        self._busy_until: float | None = None  # monotonic: the kept work's projected end
        self.startup_s = 30.0  # this process, start to ready (the app sets the measured one)
        # How long restarts took here from the old process's exit to the new one ready
        # (the app reads restarts.log), None when none is recorded.
        self.relaunch_s: Callable[[], float | None] = lambda: None
        self._relaunch_s = 0.0  # the projection, fixed when the drain starts
        self.linger_s = 0.0  # after the drain, result downloads may keep it up this long
        self._outcomes: dict[tuple[str, str], int] = {}
        self._latency: dict[str, LatencyHistogram] = {}
        self._engines: dict[str, EngineStats] = {}
        self._recent: deque[float] = deque(maxlen=recent)
        self.finished_while_draining = 0
        self.http = HttpActivity()
        self.trim_after_requests = True  # malloc_trim when the last request ends

    # ---- the drain --------------------------------------------------------------------
    def on_drain(self, listener: Callable[[float], None]) -> None:
        """Call ``listener(deadline)`` (monotonic) when the drain starts, and again with the
        current time when the deadline passes. The listener keeps the work that can end by
        the deadline (telling :meth:`busy_until` when it will), and refuses the rest with
        :meth:`draining_error`."""
        self._drain_listeners.append(listener)

    def begin_drain(self, timeout_s: float) -> None:
        """Refuse new work; let each listener keep what can finish within ``timeout_s``."""
        relaunch = self.relaunch_estimate_s()
        now = time.monotonic()
        with self._cond:
            self._drain_started, self._drain_deadline = now, now + timeout_s
            self._busy_until = now
            self._relaunch_s = relaunch
            self.draining.set()
        self._tell_listeners(now + timeout_s)

    def relaunch_estimate_s(self) -> float:
        """Seconds from this process's exit until a new one is ready: learnt from the last
        restarts on this machine, else restart.sh's and run.sh's default steps plus this
        process's own start-up time."""
        try:
            learnt = self.relaunch_s()
        except Exception:  # noqa: BLE001 — an unreadable record must not stop the drain
            logger.exception("could not read the restart record; using the default")
            learnt = None
        return learnt if learnt is not None else DEFAULT_LAUNCH_S + self.startup_s

    def end_drain_deadline(self) -> None:
        """The deadline has passed: listeners refuse whatever still waits."""
        self._tell_listeners(time.monotonic())

    def _tell_listeners(self, deadline: float) -> None:
        for listener in self._drain_listeners:
            listener(deadline)

    def busy_until(self, end: float) -> None:
        """Kept work is projected to end at ``end`` (monotonic)."""
        with self._cond:
            self._busy_until = max(self._busy_until or end, end)

    def past_drain_deadline(self) -> bool:
        with self._cond:
            return (self._drain_deadline is not None
                    and time.monotonic() >= self._drain_deadline)

    def retry_after_s(self) -> float:
        """While draining: seconds until a new process is projected to be ready — the kept
        work's end (at most the deadline), the download linger, the shutdown, and the
        relaunch (:meth:`relaunch_estimate_s`, fixed when the drain began)."""
        now = time.monotonic()
        with self._cond:
            end = self._busy_until or now
            if self._drain_deadline is not None:
                end = min(end, self._drain_deadline)
            relaunch = self._relaunch_s if self._drain_started is not None else None
        if relaunch is None:
            relaunch = self.relaunch_estimate_s()
        return max(end - now, 0.0) + self.linger_s + SHUTDOWN_S + relaunch

    def draining_error(self) -> BusyError:
        return BusyError.retry_in(self.retry_after_s(), DRAINING_WHY)

    def estimate_s(self) -> float:
        """A cautious duration of one synthesis: the longest of the last 8 finished."""
        with self._cond:
            recent = list(self._recent)[-8:]
        return max(recent) if recent else DEFAULT_SYNTHESIS_S

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """Accepted work (a gate's slot, waiting or running): refused with a retryable
        :class:`BusyError` when draining, else counted until it ends; the drain waits for
        it, and :meth:`track` inside it is not refused."""
        with self._cond:
            if self.draining.is_set():
                raise self.draining_error()
            self._accepted += 1
        token = _ADMITTED.set(True)
        try:
            yield
        finally:
            try:
                _ADMITTED.reset(token)
            except ValueError:  # a stream's slot ends in another thread (and context)
                pass
            with self._cond:
                self._accepted -= 1
                self._cond.notify_all()

    @contextmanager
    def track(self, mode: str) -> Iterator[None]:
        """Run one request; raises :class:`BusyError` at once when draining, unless the
        request was accepted (see :meth:`admitted`) before the drain began."""
        with self._cond:
            if self.draining.is_set() and not _ADMITTED.get():
                self._finish(mode, "refused", None)
                raise self.draining_error()
            self._in_flight += 1
        t0, outcome = time.perf_counter(), "error"
        try:
            yield
            outcome = "ok"
        except GeneratorExit:
            outcome = "cancelled"
            raise
        except Exception as e:
            outcome = classify(e)
            raise
        finally:
            with self._cond:
                self._in_flight -= 1
                self._finish(mode, outcome, time.perf_counter() - t0)
                if self.draining.is_set():
                    self.finished_while_draining += 1
                idle = self._in_flight == 0
                self._cond.notify_all()
            if idle and self.trim_after_requests:
                resources.trim_idle()  # ~ms; only when no other request is running

    def _finish(self, mode: str, outcome: str, seconds: float | None) -> None:
        key = (mode, outcome)
        self._outcomes[key] = self._outcomes.get(key, 0) + 1
        if seconds is None:
            return
        self._latency.setdefault(mode, LatencyHistogram()).observe(seconds)
        if outcome in ("ok", "error"):
            self._recent.append(seconds)

    def observe_engine(self, engine: str, seconds: float, first_chunk_s: float,
                       llm_tokens: int = 0, llm_s: float = 0.0) -> None:
        """One synthesis ``engine`` finished: its time, its first chunk's, its LLM's work."""
        with self._cond:
            stats = self._engines.setdefault(engine, EngineStats())
            stats.latency.observe(seconds)
            stats.first_chunk.observe(first_chunk_s)
            stats.llm_tokens += llm_tokens
            stats.llm_s += llm_s

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    @property
    def accepted(self) -> int:
        """Requests accepted by a gate: waiting for a slot or running."""
        with self._cond:
            return self._accepted

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is in flight nor accepted, or ``timeout`` s pass; True when
        idle."""
        with self._cond:
            return self._cond.wait_for(lambda: self._in_flight == 0 and self._accepted == 0,
                                       timeout=timeout)

    def slow_streak(self, threshold_s: float) -> int:
        """How many of the most recent finished syntheses in a row took > ``threshold_s``."""
        with self._cond:
            recent = list(self._recent)
        streak = 0
        for seconds in reversed(recent):
            if seconds <= threshold_s:
                break
            streak += 1
        return streak

    def snapshot(self) -> TrackerSnapshot:
        with self._cond:
            return TrackerSnapshot(self._in_flight, dict(self._outcomes),
                                   {m: h.copy() for m, h in self._latency.items()},
                                   {e: st.copy() for e, st in self._engines.items()})


def classify(e: BaseException) -> str:
    """Outcome label of a failed request: the user's fault, ours, or a refusal."""
    if isinstance(e, BusyError):
        return "refused"
    if isinstance(e, ModelError) or not isinstance(e, CosyVoiceError):
        return "error"
    return "rejected"


class DrainGuard:
    """ASGI middleware: while draining, refuse new synthesis at the door with a 503.

    Queued work would otherwise wait for a slot and meet a server that is shutting
    down; a 503 with ``Retry-After`` is the clear, retryable answer (the Gradio page
    shows "busy, please try again", gradio_client raises QueueError). Health, metrics,
    the page itself, result streams and result files of in-flight jobs (GET) still pass.
    Every request is noted in ``activity``, so the drain can wait until result
    downloads have stopped.
    """

    GUARDED = ("/queue/join", "/call/", "/run/", "/api/", "/v1/")

    def __init__(self, app: Any, tracker: RequestTracker) -> None:
        self.app = app
        self.tracker = tracker

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.tracker.http.seen()
        if (scope["type"] == "http" and self.tracker.draining.is_set()
                and scope["method"] == "POST" and any(g in scope["path"] for g in self.GUARDED)):
            e = self.tracker.draining_error()
            body = json.dumps(error_body(503, str(e), type(e).__name__)).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"retry-after", str(e.retry_after_s).encode()),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


class DrainingServer:
    """A uvicorn server whose first SIGTERM/SIGINT drains before shutting down.

    A second signal stops waiting for in-flight work; a third (SIGINT) forces exit.
    """

    QUIET_S = 1.5  # a result download starts within ms of its "completed" message

    def __init__(self, config: Any, tracker: RequestTracker, drain_timeout_s: float,
                 linger_s: float = 5.0) -> None:
        import uvicorn

        self.tracker = tracker
        self.drain_timeout_s = drain_timeout_s
        self.linger_s = linger_s
        tracker.linger_s = linger_s
        self._drain_thread: threading.Thread | None = None
        self._loop: Any = None
        self.server = uvicorn.Server(config)
        # Our handler replaces uvicorn's; not recording the signal means uvicorn does
        # not re-raise it after shutdown, so a drained process exits with status 0.
        self.server.handle_exit = self.handle_exit  # type: ignore[method-assign]

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drain_thread is None:
            try:  # the handler runs in the main thread, inside the server's event loop
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None
            logger.info("%s received: draining (up to %.0f s for %d accepted request(s), "
                        "%d running)", signal.Signals(sig).name, self.drain_timeout_s,
                        self.tracker.accepted, self.tracker.in_flight)
            self.tracker.begin_drain(self.drain_timeout_s)
            self._drain_thread = threading.Thread(target=self._drain, name="drain",
                                                  daemon=True)
            self._drain_thread.start()
        elif not self.server.should_exit:
            logger.warning("second signal: shutting down without waiting for in-flight work")
            self.server.should_exit = True
        else:
            self.server.force_exit = True

    def _drain(self) -> None:
        t0 = time.monotonic()
        idle = self.tracker.wait_idle(self.drain_timeout_s)
        if idle:
            logger.info("drained in %.1f s", time.monotonic() - t0)
            if self.tracker.finished_while_draining and self.linger_s > 0:
                # Their clients still have to fetch the result files (a GET each).
                waited = self.tracker.http.wait_quiet(self.QUIET_S, self.linger_s)
                logger.info("served result downloads for %.1f s after the drain", waited)
            logger.info("shutting down")
        else:
            self.tracker.end_drain_deadline()  # anything still waiting: 503 now
            logger.warning("drain deadline (%.0f s) passed with %d request(s) running; "
                           "shutting down anyway", self.drain_timeout_s, self.tracker.in_flight)
        self._end_streams()
        self.server.should_exit = True

    def _end_streams(self) -> None:
        """Close every open page's Gradio heartbeat stream (they never end on their own,
        and uvicorn would wait for them): set the mounted Gradio apps' stop events."""
        if self._loop is None:
            return
        for route in getattr(self.server.config.app, "routes", []):
            event = getattr(getattr(route, "app", None), "stop_event", None)
            if event is not None:
                self._loop.call_soon_threadsafe(event.set)

    def run(self) -> None:
        self.server.run()
        if self.tracker.in_flight:
            # Worker threads still busy would block interpreter exit (they are joined):
            # give the caller's cleanup a moment, then leave without them.
            timer = threading.Timer(5.0, os._exit, args=(0,))
            timer.daemon = True
            timer.start()


def serve(app: Any, host: str, port: int, tracker: RequestTracker,
          drain_timeout_s: float, linger_s: float = 5.0) -> None:
    """Serve ``app`` until a signal, draining in-flight requests first."""
    import uvicorn

    # After the drain (and the heartbeat streams' end) nothing is left worth waiting for.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                            timeout_graceful_shutdown=2)
    DrainingServer(config, tracker, drain_timeout_s, linger_s).run()
