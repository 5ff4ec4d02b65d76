"""glibc heap controls: memory freed by a worker thread goes back to the OS on trim."""

from __future__ import annotations

import platform
import threading

import psutil
import pytest

from cosyvoice.lifecycle import resources

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="glibc only")


def test_trim_returns_memory_a_worker_thread_freed():
    proc = psutil.Process()

    pins: list[bytearray] = []

    def churn() -> None:
        # 250 MB in 64 KB blocks (under glibc's mmap threshold, so from the thread's
        # arena), each followed by a small block that stays: the freed space is then
        # in the middle of the heap, where only malloc_trim gives it back.
        blocks = []
        for _ in range(4000):
            blocks.append(bytearray(64 * 1024))
            pins.append(bytearray(64))
        del blocks

    worker = threading.Thread(target=churn)
    before = proc.memory_info().rss
    worker.start()
    worker.join()
    kept = proc.memory_info().rss
    assert resources.trim_heap()
    after = proc.memory_info().rss
    assert kept - before > 100 * 2**20, "the churn did not stay in the arena; test is moot"
    assert kept - after > 100 * 2**20, (before, kept, after)
    assert len(pins) == 4000


def test_arena_cap_is_accepted():
    assert resources.limit_malloc_arenas(2)
    assert not resources.limit_malloc_arenas(0)
