"""Files written atomically: a reader (or a crash) never sees a half-written file under
its final name. (Audio has its own writer, :func:`cosyvoice.audio.io.write_wav_atomic`.)
Files from elsewhere (a model folder) read within bounds: :func:`read_text_bounded`."""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO


def write_atomic(path: Path, write: Callable[[BinaryIO], object], durable: bool = True,
                 mode: int | None = None) -> Path:
    """Call ``write`` on a temp file (binary) in ``path``'s folder (made if missing), then
    rename it over ``path``; ``durable`` fsyncs first, ``mode`` sets the permissions (a
    temp file is private to its owner). OSError as raised."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".partial-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: Path, text: str, durable: bool = True) -> Path:
    """Write ``text`` (UTF-8) through :func:`write_atomic` (records a user would lose with
    ``durable``: voices, jobs, the lexicon; not files remade on the next request)."""
    return write_atomic(path, lambda f: f.write(text.encode("utf-8")), durable)


def write_json_atomic(path: Path, data: Any, indent: int | None = 1,
                      durable: bool = True) -> Path:
    """``data`` as JSON (non-ASCII kept, a final newline) through :func:`write_text_atomic`."""
    text = json.dumps(data, ensure_ascii=False, indent=indent) + "\n"
    return write_text_atomic(path, text, durable)


class UnreadableFile(ValueError):
    """A file that is not read: not a regular file, too big, or not UTF-8 (the message says
    which, without the file's name: the caller names it)."""


def read_text_bounded(path: Path, max_bytes: int) -> str:
    """The UTF-8 text of ``path`` if it is a regular file (a link to one is followed) of at
    most ``max_bytes``. Opened without blocking and checked before any read: a FIFO, a
    device (a link to ``/dev/zero``) or a directory is refused, never read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UnreadableFile(f"cannot be opened ({os.strerror(e.errno or errno.EIO)})") from e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("is not a regular file (a directory, FIFO, device or socket)")
        if info.st_size > max_bytes:
            raise UnreadableFile(f"is {info.st_size / 2**10:,.0f} kB; at most "
                                 f"{max_bytes / 2**10:,.0f} kB is read")
        data = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnreadableFile(f"grew past {max_bytes / 2**10:,.0f} kB while it was read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnreadableFile(f"is not UTF-8 text (byte {e.start})") from e
