"""A bounded admission gate for syntheses: N running, M waiting (first come, first
served), the rest refused.

The API and the UI pass every synthesis through it, so a burst of clients gets a clean
"busy, try again" (429 + Retry-After) instead of piling up threads and memory. A request
let in is *accepted work* for the drain (see :class:`RequestTracker`): when the drain
begins, the gate projects when each accepted request would end — the running ones first,
then the waiting ones in order, each taking its measured service time (:class:`ServiceTimes`:
how long recent slots were held, per character of text where the caller gives its size,
times :data:`SAFETY`) — keeps those that end within the deadline, and answers the others
at once with a retryable 503. A kept request is thus one that finishes; a refused one
learns it at once, not at the deadline.
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

SAFETY = 1.5  # the drain plans each request as this many times its measured service time
FLOOR_CHARS = 40  # a shorter text costs as much as this many characters (fixed overheads)
RUNNING_LEFT = 0.25  # a running request past its estimate: at least this share of it left


class ServiceTimes:
    """How long recent slots were held, and for how much text: the drain's projection of
    one request's service time. Cautious by construction (the slowest recent rate)."""

    def __init__(self, keep: int = 16) -> None:
        self._holds: deque[tuple[float, int]] = deque(maxlen=keep)  # (seconds, characters)

    def record(self, seconds: float, size: int) -> None:
        self._holds.append((seconds, size))

    def estimate(self, size: int, fallback: float) -> float:
        """Seconds a request of ``size`` characters (0: unknown) is projected to hold its
        slot: the slowest recent rate per character times its size where both are known,
        else the longest recent hold, else ``fallback``."""
        sized = [(s, n) for s, n in self._holds if n > 0]
        if size > 0 and sized:
            rate = max(s / max(n, FLOOR_CHARS) for s, n in sized)
            return rate * max(size, FLOOR_CHARS)
        return max((s for s, _ in self._holds), default=fallback)


class _Ticket:
    __slots__ = ("refused", "size", "started")

    def __init__(self, size: int) -> None:
        self.refused: BusyError | None = None
        self.size = size  # characters of text, 0 when unknown
        self.started = 0.0  # monotonic, once running


class SynthesisGate:
    def __init__(self, concurrency: int, queue_size: int,
                 tracker: RequestTracker | None = None) -> None:
        self.concurrency = max(1, int(concurrency))
        self.queue_size = max(0, int(queue_size))
        self.tracker = tracker if tracker is not None else RequestTracker()
        self.tracker.on_drain(self.shed)
        self.service = ServiceTimes()
        self._cond = threading.Condition()
        self._running: set[_Ticket] = set()
        self._waiting: deque[_Ticket] = deque()

    @property
    def depth(self) -> int:
        """Requests admitted: running plus waiting."""
        with self._cond:
            return len(self._running) + len(self._waiting)

    @contextmanager
    def slot(self, size: int = 0) -> Iterator[None]:
        """Run the body in a slot; raises QueueFullError when full, BusyError when the
        app drains (before, or while waiting, if the drain cannot cover this request).
        ``size``: the request's characters of text (0 when it has none or it is unknown),
        so that the drain can project long and short requests alike."""
        with self.tracker.admitted():
            ticket = self._enter(max(0, int(size)))
            try:
                yield
            finally:
                with self._cond:
                    self._running.discard(ticket)
                    self.service.record(time.monotonic() - ticket.started, ticket.size)
                    self._cond.notify_all()

    def _enter(self, size: int) -> _Ticket:
        with self._cond:
            if len(self._running) + len(self._waiting) >= self.concurrency + self.queue_size:
                raise QueueFullError.retry_in(
                    self.tracker.estimate_s(),
                    f"The server is busy ({self.concurrency} running, {self.queue_size} "
                    "waiting)")
            ticket = _Ticket(size)
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

    def _projected_s(self, ticket: _Ticket) -> float:
        """The drain's planning time of ``ticket``: its measured service time × SAFETY."""
        return SAFETY * self.service.estimate(ticket.size, self.tracker.estimate_s())

    def shed(self, deadline: float) -> None:
        """Drain listener: keep the waiting requests projected to end by ``deadline``
        (monotonic), refuse the others at once (retryable, with an honest Retry-After)."""
        now = time.monotonic()
        with self._cond:
            free = []
            for t in self._running:
                est = self._projected_s(t)
                free.append(now + max(est - (now - t.started), RUNNING_LEFT * est))
            free += [now] * (self.concurrency - len(free))
            heapq.heapify(free)
            end, refuse = max(free), []
            for ticket in self._waiting:
                start, est = heapq.heappop(free), self._projected_s(ticket)
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
