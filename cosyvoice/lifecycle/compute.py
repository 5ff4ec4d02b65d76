"""Long-lived threads for the engines' compute.

Every request used to run its engine in whichever worker thread the web framework lent it
(anyio's pool, whose idle threads exit after 10 s, and gradio's). Each new thread that runs
torch's parallel kernels gets its own glibc arena and OpenMP team, and an arena that once
held a large model's activations keeps pages that ``malloc_trim`` cannot give back. Measured
on a real-size CosyVoice3 folder in one process (``bench/cosyvoice_residue.py --threads 8``,
2 cores, torch 2 threads): 8 requests from 8 fresh threads, unload, ``malloc_trim(0)`` → +92.9
MB above the first cycle's unload (bounded by the arena count; the app's real-size unload
readings had varied from +28 to +58 MB over pre-load). The same requests run on these threads
(``--compute``: a thread is started when more requests run at once than ever before — the gate
bounds that — and never retired; the most recently used one is lent first): +15.5 MB, one new
thread's first use, and a third cycle adds +1.1 MB. The caller's thread keeps everything else
(gate, tracker, joiner).
"""

from __future__ import annotations

import contextvars
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")
_END = object()


class _Worker:
    """One daemon thread running the jobs put to it, in the caller's context (contextvars).
    Daemon: a process that exits mid-request (drain deadline, SIGTERM) is not held back."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, daemon=True, name=name)
        self.thread.start()

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        if threading.current_thread() is self.thread:  # e.g. a generator closed by gc here
            return fn(*args)
        done: Future = Future()
        self._jobs.put((done, contextvars.copy_context(), fn, args))
        return done.result()

    def _loop(self) -> None:
        while True:
            done, context, fn, args = self._jobs.get()
            done.set_running_or_notify_cancel()
            try:
                done.set_result(context.run(fn, *args))
            except BaseException as e:  # noqa: BLE001 — handed to the caller as is
                done.set_exception(e)


class ComputeThreads:
    """A pool of :class:`_Worker` threads, each lent to one caller at a time: a generator
    keeps its thread from its first step to its close, so thread-local state it sets across
    its yields (``torch.inference_mode()``) stays on one thread and is never seen by another
    request. A call from one of the threads runs in place (no wait on its own pool)."""

    def __init__(self, name: str = "compute") -> None:
        self.name = name
        self._idle: list[_Worker] = []
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    @property
    def started(self) -> int:
        """Threads started so far (the most requests that ever ran at once)."""
        return len(self._threads)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on one of the threads; its result or its exception."""
        if threading.current_thread() in self._threads:
            return fn(*args)
        with self._lend() as worker:
            return worker.run(fn, *args)

    def iterate(self, items: Iterator[T]) -> Iterator[T]:
        """``items`` (an engine's generator) advanced step by step on one thread, each
        sentence or token hop handed back here as it comes; closing this closes it there."""
        if threading.current_thread() in self._threads:
            yield from items
            return
        with self._lend() as worker:
            try:
                while (item := worker.run(next, items, _END)) is not _END:
                    yield item
            finally:
                close = getattr(items, "close", None)
                if close is not None:
                    worker.run(close)

    @contextmanager
    def _lend(self) -> Iterator[_Worker]:
        with self._lock:
            if self._idle:
                worker = self._idle.pop()  # the most recently used: its arena is warm
            else:
                worker = _Worker(f"{self.name}-{len(self._threads)}")
                self._threads.add(worker.thread)
        try:
            yield worker
        finally:
            with self._lock:
                self._idle.append(worker)


def call_niced(fn: Callable[[], T], niceness: int, name: str = "background") -> T:
    """``fn()`` on a new thread whose niceness is raised by ``niceness``, then its result or
    its exception: long background work (a voice fit) that the app's serving threads
    overtake on a busy CPU. On Linux niceness is per thread, and the threads ``fn`` starts
    inherit it (its worker pool); where it cannot be changed, ``fn`` runs as it is (logged)."""
    box: dict[str, Any] = {}

    def run() -> None:
        if niceness > 0:
            try:
                tid = threading.get_native_id()
                os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid)
                               + niceness)
            except (OSError, AttributeError) as e:
                logger.warning("%s runs at normal priority: %s", name, e)
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 — handed to the caller as is
            box["error"] = e

    thread = threading.Thread(target=contextvars.copy_context().run, args=(run,),
                              name=name, daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
