"""cosyvoice.kernels.thread: every call, from any thread, runs on the one kernel thread (so
torch starts one OpenMP team), under inference mode; errors come back to the caller; a call
made on the kernel thread runs at once; a forked child gets a kernel thread of its own."""

from __future__ import annotations

import os
import select
import signal
import threading

import pytest
import torch

from cosyvoice.kernels.thread import on_kernel_thread


def _where() -> tuple[int, bool]:
    return threading.get_ident(), torch.is_inference_mode_enabled()


def test_calls_from_any_thread_run_on_one_thread_in_inference_mode():
    seen: list[tuple[int, bool]] = [on_kernel_thread(_where)]
    workers = [threading.Thread(target=lambda: seen.append(on_kernel_thread(_where)))
               for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(seen) == 5
    assert {ident for ident, _ in seen} != {threading.get_ident()}
    assert len({ident for ident, _ in seen}) == 1
    assert all(mode for _, mode in seen)


def test_errors_reach_the_caller_and_nested_calls_run_at_once():
    def boom() -> None:
        raise ValueError("the vocoder met a non-finite activation")

    with pytest.raises(ValueError, match="non-finite"):
        on_kernel_thread(boom)
    outer, inner = on_kernel_thread(lambda: (_where()[0], on_kernel_thread(_where)[0]))
    assert outer == inner


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_gets_its_own_kernel_thread():
    on_kernel_thread(_where)  # the parent's thread exists before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a call must not wait on the parent's (absent) thread
        try:
            os.write(write, str(on_kernel_thread(lambda: int(torch.ones(3).sum()))).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 60)
        got = os.read(read, 16) if ready else b""
    finally:
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
    assert got == b"3"
