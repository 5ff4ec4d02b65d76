"""The CPU's feature flags, and whether it has int8 dot products worth running int8 on."""

from __future__ import annotations

from pathlib import Path

# CPU flags of int8 dot-product instructions. Without them (AVX2 only) oneDNN's int8 convs
# were slower than its fp32 ones: the vocoder's fast path with stages 1-2 in int8 took
# 1.21 x the fp32 time on 2 Zen 2 cores (1.60 vs 1.33 s for 5 s of speech, 2026-12-05),
# against 0.63 x on 2 Sapphire Rapids cores (bench/vocoder_int8.py).
INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (or the text given); empty if
    unreadable (not Linux)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def has_int8_dot(cpuinfo: str | None = None) -> bool:
    """Whether the CPU has int8 dot products that accumulate in int32 (VNNI, AMX)."""
    return bool(cpu_flags(cpuinfo) & set(INT8_DOT_FLAGS))
