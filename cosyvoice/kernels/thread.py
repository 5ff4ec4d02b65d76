"""One thread for the CPU conv kernels of the whole process.

torch runs its CPU ops on OpenMP (libgomp), and libgomp keeps a team of worker threads per
thread that starts parallel work. Once two threads have each started one, there are more
OpenMP threads than cores and libgomp's workers stop spinning between parallel regions
for the rest of the process: every later small op pays a futex wake-up. Measured on 2
Zen 4 cores (2026-12-07, load < 1, ``/tmp`` probe of Kokoro's generator on a 6-phoneme
first piece, 2 torch threads): 175 ms when every call came from one thread, 335–560 ms
once a second thread had run it too, whichever thread called afterwards. The app calls
models from several request threads, so the tiled generators (Kokoro's, the HiFi-GAN
vocoder's fast path) run every call, their warm-up included, on this one thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

T = TypeVar("T")

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_thread_ident: int | None = None


def _start() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(1, thread_name_prefix="cpu-kernels",
                                           initializer=_remember)
        return _executor


def _remember() -> None:
    global _thread_ident
    _thread_ident = threading.get_ident()


def _forget() -> None:
    """In a forked child: the parent's kernel thread does not exist here; start anew."""
    global _executor, _thread_ident, _lock
    _executor, _thread_ident, _lock = None, None, threading.Lock()


os.register_at_fork(after_in_child=_forget)


def on_kernel_thread(fn: Callable[..., T], *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` under ``torch.inference_mode()`` on the kernel thread (at
    once when called from it); its exception is raised here."""
    def call() -> T:
        with torch.inference_mode():
            return fn(*args, **kwargs)

    if threading.get_ident() == _thread_ident:
        return call()
    return _start().submit(call).result()
