"""A bounded admission gate for syntheses: N running, M waiting (first come, first
served), the rest refused.

The API and the UI pass every synthesis through it, so a burst of clients gets a clean
"busy, try again" (429 + Retry-After) instead of piling up threads and memory. A request
let in is *accepted work* for the drain (see :class:`RequestTracker`): when the drain
begins, the gate projects when each waiting request would end — the running ones first,
each taking the tracker's cautious estimate — keeps those that end within the deadline,
and answers the others at once with a retryable 503.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from cosyvoice.errors import BusyError, QueueFullError
from cosyvoice.lifecycle.drain import RequestTracker


class _Ticket:
    __slots__ = ("refused", "started")

    def __init__(self) -> None:
        self.refused: BusyError | None = None
        self.started = 0.0  # monotonic, once running


class SynthesisGate:
    def __init__(self, concurrency: int, queue_size: int,
                 tracker: RequestTracker | None = None) -> None:
        self.concurrency = max(1, int(concurrency))
        self.queue_size = max(0, int(queue_size))
        self.tracker = tracker if tracker is not None else RequestTracker()
        self.tracker.on_drain(self.shed)
        self._cond = threading.Condition()
        self._running: set[_Ticket] = set()
        self._waiting: deque[_Ticket] = deque()

    @property
    def depth(self) -> int:
        """Requests admitted: running plus waiting."""
        with self._cond:
            return len(self._running) + len(self._waiting)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Run the body in a slot; raises QueueFullError when full, BusyError when the
        app drains (before, or while waiting, if the drain cannot cover this request)."""
        with self.tracker.admitted():
            ticket = self._enter()
            try:
                yield
            finally:
                with self._cond:
                    self._running.discard(ticket)
                    self._cond.notify_all()

    def _enter(self) -> _Ticket:
        with self._cond:
            if len(self._running) + len(self._waiting) >= self.concurrency + self.queue_size:
                raise QueueFullError.retry_in(
                    self.tracker.estimate_s(),
                    f"The server is busy ({self.concurrency} running, {self.queue_size} "
                    "waiting)")
            ticket = _Ticket()
            self._waiting.append(ticket)
            self._cond.wait_for(lambda: ticket.refused is not None or (
                len(self._running) < self.concurrency and self._waiting[0] is ticket))
            self._waiting.remove(ticket)
            self._cond.notify_all()
            if ticket.refused is not None:
                raise ticket.refused
            ticket.started = time.monotonic()
            self._running.add(ticket)
            return ticket

    def shed(self, deadline: float) -> None:
        """Drain listener: keep the waiting requests projected to end by ``deadline``
        (monotonic), refuse the others at once (retryable, with an honest Retry-After)."""
        est = self.tracker.estimate_s()
        now = time.monotonic()
        with self._cond:
            free = [now + max(est - (now - t.started), 0.0) for t in self._running]
            free += [now] * (self.concurrency - len(free))
            heapq.heapify(free)
            end, refuse = max(free), []
            for ticket in self._waiting:
                start = heapq.heappop(free)
                if start + est <= deadline:
                    heapq.heappush(free, start + est)
                    end = max(end, start + est)
                else:
                    heapq.heappush(free, start)
                    refuse.append(ticket)
            self.tracker.busy_until(end)
            for ticket in refuse:
                ticket.refused = self.tracker.draining_error()
            self._cond.notify_all()
