"""A bounded admission gate for syntheses: N running, M waiting, the rest refused.

The API passes every synthesis through it, so a burst of clients gets a clean
"busy, try again" (429 + Retry-After) instead of piling up threads and memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from cosyvoice.errors import QueueFullError


class SynthesisGate:
    def __init__(self, concurrency: int, queue_size: int) -> None:
        self.concurrency = max(1, int(concurrency))
        self.queue_size = max(0, int(queue_size))
        self._slots = threading.Semaphore(self.concurrency)
        self._lock = threading.Lock()
        self._admitted = 0

    @property
    def depth(self) -> int:
        """Requests admitted: running plus waiting."""
        with self._lock:
            return self._admitted

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._lock:
            if self._admitted >= self.concurrency + self.queue_size:
                raise QueueFullError(
                    f"The server is busy ({self.concurrency} running, {self.queue_size} "
                    "waiting); please try again in a few seconds.")
            self._admitted += 1
        try:
            with self._slots:
                yield
        finally:
            with self._lock:
                self._admitted -= 1
