"""The engines' long-lived compute threads (cosyvoice/lifecycle/compute.py)."""

from __future__ import annotations

import contextvars
import threading

import pytest

from cosyvoice.lifecycle.compute import ComputeThreads

REQUEST = contextvars.ContextVar("request", default="none")
STATE = threading.local()


def steps(tag: str, n: int, log: list):
    """A generator that sets thread-local state across its yields, like
    ``with torch.inference_mode():`` in an engine."""
    STATE.owner = tag
    try:
        for i in range(n):
            log.append((tag, i, threading.current_thread().name, STATE.owner, REQUEST.get()))
            yield i
    finally:
        log.append((tag, "closed", threading.current_thread().name))
        STATE.owner = None


def test_requests_from_many_fresh_threads_reuse_one_compute_thread():
    pool = ComputeThreads()
    names = []

    def request():
        names.append(pool.call(lambda: threading.current_thread().name))

    for _ in range(10):  # one after another, each from a new thread, as anyio lends them
        t = threading.Thread(target=request)
        t.start()
        t.join()
    assert names == ["compute-0"] * 10
    assert pool.started == 1


def test_a_generator_runs_on_one_thread_and_never_shares_it_while_open():
    pool = ComputeThreads()
    log: list = []
    a = pool.iterate(steps("a", 3, log))
    b = pool.iterate(steps("b", 3, log))
    for x, y in zip(a, b, strict=True):  # interleaved, as two streamed requests are
        assert x == y
    rows = [r for r in log if r[1] != "closed"]
    threads = {tag: {r[2] for r in rows if r[0] == tag} for tag in "ab"}
    assert len(threads["a"]) == len(threads["b"]) == 1
    assert threads["a"] != threads["b"]  # two open generators: two threads
    assert threading.current_thread().name not in threads["a"] | threads["b"]
    assert all(r[3] == r[0] for r in rows)  # each saw only its own thread-local state
    assert pool.started == 2


def test_the_callers_context_and_errors_cross_over():
    pool = ComputeThreads()
    REQUEST.set("req-7")
    assert pool.call(REQUEST.get) == "req-7"
    with pytest.raises(ZeroDivisionError):
        pool.call(lambda: 1 / 0)
    log: list = []
    assert list(pool.iterate(steps("c", 2, log))) == [0, 1]
    assert {r[4] for r in log if r[1] != "closed"} == {"req-7"}

    def broken():
        yield 1
        raise ValueError("the engine failed")

    it = pool.iterate(broken())
    assert next(it) == 1
    with pytest.raises(ValueError, match="the engine failed"):
        next(it)
    assert pool.call(lambda: 2) == 2  # the thread is free again


def test_stopping_early_closes_the_generator_on_its_thread():
    pool = ComputeThreads()
    log: list = []
    it = pool.iterate(steps("d", 5, log))
    assert next(it) == 0
    it.close()  # a client that hung up mid-stream
    closed = [r for r in log if r[1] == "closed"]
    assert closed == [("d", "closed", log[0][2])]
    assert pool.call(lambda: STATE.owner) is None  # its finally ran there


def test_a_call_from_a_compute_thread_runs_in_place():
    pool = ComputeThreads()
    inner = pool.call(lambda: pool.call(lambda: threading.current_thread().name))
    assert inner == "compute-0"
    assert list(pool.call(lambda: list(pool.iterate(iter([1, 2]))))) == [1, 2]
    assert pool.started == 1
