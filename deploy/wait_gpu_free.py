"""Wait until NVML no longer lists a process on any GPU: restart.sh's wait for the old app's
GPU memory, as a script so that a benchmark can run the very same wait against a CUDA process.

    python deploy/wait_gpu_free.py PID [TIMEOUT_S]

Exit status: 0 the pid holds no GPU memory (any more); 1 it still holds some after TIMEOUT_S
(default 60); 3 no NVIDIA driver or NVML library here (restart.sh then sleeps instead).
Prints one line saying which, with the seconds waited and the MB last seen.
"""

from __future__ import annotations

import sys
import time


def held(pynvml, pid: int) -> tuple[bool, int]:
    """Whether ``pid`` is listed on any GPU (compute or graphics) and the bytes it uses."""
    present, used = False, 0
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        for query in (pynvml.nvmlDeviceGetComputeRunningProcesses,
                      pynvml.nvmlDeviceGetGraphicsRunningProcesses):
            try:
                procs = query(h)
            except pynvml.NVMLError:
                continue
            for p in procs:
                if p.pid == pid:
                    present, used = True, used + int(p.usedGpuMemory or 0)
    return present, used


def main(argv: list[str]) -> int:
    if not argv or not argv[0].isdigit():
        print("usage: wait_gpu_free.py PID [TIMEOUT_S]", file=sys.stderr)
        return 64
    pid, timeout = int(argv[0]), float(argv[1]) if len(argv) > 1 else 60.0
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return 3  # no NVIDIA driver / library: the caller sleeps instead
    t0 = time.time()
    while True:
        present, used = held(pynvml, pid)
        if not present:
            print(f"GPU: pid {pid} holds no GPU memory ({time.time() - t0:.1f} s)")
            return 0
        if time.time() - t0 > timeout:
            print(f"GPU: pid {pid} still holds {used / 2**20:.0f} MB after {timeout:.0f} s")
            return 1
        time.sleep(0.25)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
