"""A pidfile guarded by an exclusive ``flock``, held for the life of the process.

The lock, not the file's presence, says whether an instance runs: a stale file left by
a killed process is simply taken over. ``restart.sh`` and ``run.sh`` read the pid from
it and check the process's command line before signalling it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from cosyvoice.state_files import set_aside


class PidFile:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Lock and write our pid; False when another live process holds the lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(self.path) and not self.path.is_file():  # a folder, a pipe ...
            set_aside(self.path, "pidfile", "not a regular file")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd
        return True

    def read_pid(self) -> int | None:
        try:
            return int(self.path.read_text().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            if self.read_pid() == os.getpid():
                self.path.unlink(missing_ok=True)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
