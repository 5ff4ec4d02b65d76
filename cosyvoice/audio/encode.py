"""Encode float32 mono audio into the formats the API serves.

Everything goes through libsndfile (soundfile): WAV, FLAC, MP3 (MPEG layer III) and
Ogg Opus; ``pcm16`` is raw little-endian 16-bit samples without a header.
"""

from __future__ import annotations

import io
import struct

import numpy as np
import soundfile as sf

from cosyvoice.audio.io import resample
from cosyvoice.errors import TextError

# format → (libsndfile format, subtype, media type, rate or None for the source rate)
FORMATS: dict[str, tuple[str, str, str, int | None]] = {
    "wav": ("WAV", "PCM_16", "audio/wav", None),
    "flac": ("FLAC", "PCM_16", "audio/flac", None),
    "mp3": ("MP3", "MPEG_LAYER_III", "audio/mpeg", None),
    "opus": ("OGG", "OPUS", "audio/ogg", 48000),
    "pcm16": ("RAW", "PCM_16", "audio/L16", None),
}


def check_format(fmt: str) -> str:
    fmt = (fmt or "wav").lower()
    if fmt == "pcm":
        fmt = "pcm16"
    if fmt not in FORMATS:
        raise TextError(f"unsupported audio format {fmt!r}; choose one of: "
                        f"{', '.join(FORMATS)} (aac is not available offline)")
    return fmt


def media_type(fmt: str, sr: int) -> str:
    mt = FORMATS[check_format(fmt)][2]
    return f"{mt};rate={sr};channels=1" if mt == "audio/L16" else mt


def pcm16_bytes(wav: np.ndarray) -> bytes:
    return (np.clip(wav, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def encode(wav: np.ndarray, sr: int, fmt: str) -> bytes:
    """The whole utterance in ``fmt`` (see :data:`FORMATS`)."""
    fmt = check_format(fmt)
    if fmt == "pcm16":
        return pcm16_bytes(wav)
    container, subtype, _, rate = FORMATS[fmt]
    if rate is not None and rate != sr:
        wav, sr = resample(wav, sr, rate), rate
    buf = io.BytesIO()
    sf.write(buf, np.clip(wav, -1.0, 1.0), sr, format=container, subtype=subtype)
    return buf.getvalue()


def streaming_wav_header(sr: int) -> bytes:
    """A 16-bit mono WAV header with 'unknown' sizes (0xFFFFFFFF), for chunked streams.

    Players and decoders that read until EOF (ffmpeg, browsers, soundfile) accept it.
    """
    unknown = 0xFFFFFFFF
    fmt_chunk = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, sr, sr * 2, 2, 16)
    return struct.pack("<4sI4s", b"RIFF", unknown, b"WAVE") + fmt_chunk + \
        struct.pack("<4sI", b"data", unknown)
