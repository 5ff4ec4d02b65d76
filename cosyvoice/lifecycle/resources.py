"""Resource readings: process RSS (psutil), torch CUDA allocator, NVML per GPU.

Every reading degrades gracefully: no GPU, no NVML library or no torch CUDA simply
yields zeros / empty lists, never an exception.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
from typing import Any

import psutil

logger = logging.getLogger(__name__)

_nvml_lock = threading.Lock()
_nvml_ok: bool | None = None


def rss_bytes() -> int:
    return psutil.Process(os.getpid()).memory_info().rss


def cuda_allocator() -> dict[str, int]:
    """``torch.cuda`` allocated / reserved bytes (zeros without CUDA)."""
    try:
        import torch
    except ImportError:
        return {"allocated": 0, "reserved": 0}
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return {"allocated": 0, "reserved": 0}
    return {"allocated": int(torch.cuda.memory_allocated()),
            "reserved": int(torch.cuda.memory_reserved())}


def _nvml():
    """The initialised pynvml module, or None when no NVIDIA driver is present."""
    global _nvml_ok
    with _nvml_lock:
        if _nvml_ok is False:
            return None
        try:
            import pynvml

            if not _nvml_ok:
                pynvml.nvmlInit()
                _nvml_ok = True
            return pynvml
        except Exception as e:  # no driver, no library
            logger.debug("NVML unavailable: %s", e)
            _nvml_ok = False
            return None


def gpu_readings() -> list[dict[str, Any]]:
    """Per GPU: name, used/total bytes, and this process's own usage where NVML tells it."""
    nv = _nvml()
    if nv is None:
        return []
    out = []
    pid = os.getpid()
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        own = 0
        try:
            for p in nv.nvmlDeviceGetComputeRunningProcesses(h):
                if p.pid == pid and p.usedGpuMemory:
                    own += int(p.usedGpuMemory)
        except nv.NVMLError:
            pass
        name = nv.nvmlDeviceGetName(h)
        out.append({"index": i, "name": name.decode() if isinstance(name, bytes) else name,
                    "used": int(mem.used), "total": int(mem.total), "process": own})
    return out


def memory_snapshot() -> dict[str, int]:
    alloc = cuda_allocator()
    gpus = gpu_readings()
    return {"rss": rss_bytes(), "cuda_allocated": alloc["allocated"],
            "cuda_reserved": alloc["reserved"],
            "gpu_process": sum(g["process"] for g in gpus)}


def diff(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    """What went away between two snapshots, in MB (positive = freed)."""
    return {f"freed_{k}_mb": round((before[k] - after[k]) / 2**20, 1) for k in before}


def free_memory() -> dict[str, Any]:
    """Collect garbage and return cached CUDA blocks to the driver."""
    collected = gc.collect()
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except ImportError:
        pass
    return {"gc_objects": collected}


def _tensor_bytes(obj: Any, seen: set[int], depth: int = 0) -> int:
    """Bytes of torch parameters/buffers reachable from ``obj`` (a few levels deep)."""
    import torch

    if id(obj) in seen or depth > 3:
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.nn.Module):
        tensors = list(obj.parameters()) + list(obj.buffers())
        return sum(t.numel() * t.element_size() for t in tensors)
    total = 0
    for value in getattr(obj, "__dict__", {}).values():
        if isinstance(value, torch.nn.Module) or hasattr(value, "__dict__"):
            total += _tensor_bytes(value, seen, depth + 1)
    return total


def model_bytes(instance: Any, before: dict[str, int], after: dict[str, int]) -> int:
    """Best estimate of a model's memory: its tensors, else the RSS / allocator growth."""
    try:
        tensors = _tensor_bytes(instance, set())
    except Exception:
        tensors = 0
    if tensors:
        return tensors
    growth = max(after["cuda_allocated"] - before["cuda_allocated"], 0)
    return growth or max(after["rss"] - before["rss"], 0)


# ---- glibc allocator ----------------------------------------------------------------
# Each thread that mallocs gets its own glibc arena (up to 8 per core), and freed memory
# stays in the arena: a server whose worker threads take turns grows its RSS in steps
# (measured here: +116 MB over 300 cloning requests, flat between steps) without any
# leak. Capping the arenas and trimming after each request returns that memory.
_M_ARENA_MAX = -8  # mallopt parameter number (malloc.h)
_libc = None


def _glibc():
    global _libc
    if _libc is None:
        import ctypes
        import ctypes.util

        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc = lib if hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt") else False
        except OSError:  # not glibc (musl, macOS): nothing to tune
            _libc = False
    return _libc or None


def limit_malloc_arenas(count: int) -> bool:
    """Cap glibc's malloc arenas (like ``MALLOC_ARENA_MAX``); False where not glibc."""
    lib = _glibc()
    return bool(lib and count > 0 and lib.mallopt(_M_ARENA_MAX, int(count)) == 1)


def trim_heap() -> bool:
    """Give free heap memory back to the OS (``malloc_trim(0)``); False where not glibc."""
    lib = _glibc()
    return bool(lib and lib.malloc_trim(0))


def trim_idle() -> None:
    """Run when the last request in flight ends: free heap pages back to the OS and, where
    CUDA is in use, the caching allocator's free blocks back to the driver (what a request
    left cached would otherwise stay reserved by this process). Tensors in use are kept;
    torch is not imported for this."""
    trim_heap()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
