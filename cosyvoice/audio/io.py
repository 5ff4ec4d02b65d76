"""Reading, resampling and writing audio. Arrays are float32 mono ``(T,)`` in [-1, 1]."""

from __future__ import annotations

import errno
import io
import logging
import os
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from cosyvoice.errors import StorageError

logger = logging.getLogger(__name__)


def read_audio(path: str | os.PathLike) -> tuple[np.ndarray, int]:
    """Read any format soundfile (libsndfile: wav, flac, ogg, mp3) can decode.

    Returns ``(samples (T, C) float32, sample_rate)``; channels are kept so that callers
    can judge them. Raises the decoder's error for unreadable files.
    """
    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return data, int(sr)


def to_mono(data: np.ndarray) -> np.ndarray:
    """``(T, C)`` → ``(T,)``, averaging only channels that carry signal.

    A stereo file with one silent channel would otherwise lose 6 dB.
    """
    if data.ndim == 1:
        return data.astype(np.float32, copy=False)
    energy = np.sqrt(np.mean(np.square(data, dtype=np.float64), axis=0))
    live = energy > max(1e-4, 0.01 * float(energy.max(initial=0.0)))
    if not live.any():
        live[:] = True
    return data[:, live].mean(axis=1).astype(np.float32)


def resample(wav: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """High-quality resampling (soxr VHQ); a no-op when the rates match."""
    if sr_in == sr_out:
        return wav.astype(np.float32, copy=False)
    out = soxr.resample(wav.astype(np.float32, copy=False), sr_in, sr_out, "VHQ")
    return out.astype(np.float32, copy=False)


def write_wav_atomic(path: str | os.PathLike, wav: np.ndarray, sr: int) -> Path:
    """Write 16-bit PCM WAV to a temp name in the same folder, then rename.

    A reader (or a crash) never sees a half-written file under the final name.
    A full disk raises :class:`StorageError` (the WAV is encoded in memory first, so the
    write fails with ENOSPC instead of libsndfile's bare "System error").
    """
    path = Path(path)
    buf = io.BytesIO()
    sf.write(buf, np.clip(wav, -1.0, 1.0), sr, subtype="PCM_16", format="WAV")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".partial-", suffix=".wav", dir=path.parent)
    except OSError as e:
        raise storage_error(e, path.parent) from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getbuffer())
            f.flush()
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise storage_error(e, path.parent) from e
        raise
    return path


def storage_error(e: OSError, folder: Path, what: str = "the audio") -> StorageError:
    """A message for a failed write into ``folder``: full disk, quota, read-only, permissions."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        why, fix = "the disk is full", "free some space (the Restart button can clear old outputs)"
    elif e.errno == errno.EROFS:
        why, fix = "the folder is on a read-only disk", "make it writable"
    elif e.errno in (errno.EACCES, errno.EPERM):
        why, fix = "the app may not write there", "fix the folder's permissions"
    else:
        why, fix = e.strerror or str(e), "check the disk"
    return StorageError(f"could not save {what} in {folder}: {why} — {fix} or point the "
                        "app at another folder / 无法保存：磁盘已满或不可写")


def peak_normalize(wav: np.ndarray, peak: float = 0.95) -> np.ndarray:
    m = float(np.max(np.abs(wav), initial=0.0))
    if m < 1e-8:
        return wav.astype(np.float32, copy=False)
    return (wav * (peak / m)).astype(np.float32)
