"""Prompt uploads of the REST routes: stored under ``cache/uploads/<private dir>/<safe name>``
while a request uses them, then removed (:func:`discard_upload`)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from fastapi import UploadFile

from cosyvoice.errors import StorageError, UploadTooLargeError


async def save_upload(upload: UploadFile, cache_dir: Path, max_bytes: int) -> Path:
    """Store an upload as ``cache/uploads/<private dir>/<its own safe name>``, so that
    messages about the file name what the user sent; remove it with :func:`discard_upload`.
    A client's path (``../../etc/passwd.wav``) is cut to its last part."""
    cache = Path(cache_dir) / "uploads"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix="prompt-", dir=cache)) / safe_upload_name(
            upload.filename)
    except OSError as e:
        raise StorageError(f"could not store the upload in {cache}: "
                           f"{e.strerror or e} — free some disk space") from e
    size = 0
    try:
        with open(path, "xb") as f:
            while chunk := await upload.read(1 << 20):
                size += len(chunk)
                if size > max_bytes:
                    raise UploadTooLargeError(f"prompt upload is over the "
                                              f"{max_bytes / 2**20:.0f} MB limit")
                f.write(chunk)
    except BaseException as e:
        discard_upload(path)
        if isinstance(e, OSError):
            raise StorageError(f"could not store the upload in {cache}: "
                               f"{e.strerror or e} — free some disk space") from e
        raise
    return path


def safe_upload_name(filename: str | None) -> str:
    """The last part of a client's file name, in letters, digits, ``.``, ``-``, ``_``."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = re.sub(r"[^\w.-]+", "_", base).lstrip(".")[-80:]
    return base or "prompt.bin"


def discard_upload(path: Path) -> None:
    """Delete an upload stored by :func:`save_upload` and its private folder."""
    path.unlink(missing_ok=True)
    if path.parent.name.startswith("prompt-"):
        try:
            path.parent.rmdir()
        except OSError:
            pass
