"""Prompt-audio validation: is this upload a usable recording of one person speaking?

Checks run cheapest first, so bad uploads are turned away before any expensive work:

1. the file: exists, is not empty, is not larger than the upload limit (not read at all);
2. the header (``soundfile.info``, reads a few bytes): a known audio format, sample rate
   between ``min_sr`` and ``max_sr``, at most ``max_channels``, not absurdly long
   (a 10-minute file is rejected here, before it is decoded or shown to the VAD);
   a WAV whose data chunk is cut short is "truncated";
3. the samples: decodable, not empty, finite (no NaN/inf), not silent, not heavily clipped;
4. speech (Silero VAD at 16 kHz): some speech present; leading and trailing silence is
   trimmed; the trimmed prompt lasts ``min_s``–``max_s``; speech fills most of it;
5. one voice (when a speaker encoder is given, :mod:`cosyvoice.speaker.turns`): two
   people taking turns are refused, naming the windows that differ.

Every rejection is a :class:`~cosyvoice.errors.PromptError` whose message says what is wrong
and what to do, in short plain English that machine translation handles well.
"""

from __future__ import annotations

import logging
import math
import os
import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from cosyvoice.audio.io import peak_normalize, read_audio, resample, to_mono
from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import ModelError, PromptError
from cosyvoice.speaker.vad import Segment, SileroVad, speech_seconds

logger = logging.getLogger(__name__)

MB = 1024 * 1024
FORMATS_HINT = "upload a WAV, FLAC, OGG or MP3 recording"


@dataclass
class PromptLimits:
    """What a prompt recording must satisfy. Sizes in bytes, times in seconds.

    ``max_clip_fraction``: share of the non-silent samples at ``|x| >= 0.99``. Measured on
    the gradio sample recordings, peak-normalized: 0.00–0.01 % as recorded; driving them
    3 dB into clipping gives 0.04–1.4 %, 10 dB gives 1.4–9 %. 1 % rejects recordings whose
    loud syllables are flattened (audible distortion, broken F0 and formant analysis) and
    keeps clean ones with a few clipped peaks.

    ``min_speech_ratio``: share of the trimmed prompt the VAD marks as speech. Clean and
    noisy (0 dB SNR) speech measured 0.78–1.0; below 0.3 the clip is mostly pauses or noise.
    """

    min_s: float = 3.0
    max_s: float = 30.0
    min_sr: int = 16000
    max_sr: int = 384000
    max_channels: int = 8
    max_upload_bytes: int = 20 * MB
    max_file_s: float = 60.0
    max_samples: int = 24_000_000          # decoded float32: 96 MB (60 s of 192 kHz stereo)
    max_clip_fraction: float = 0.01
    min_speech_ratio: float = 0.3
    silence_peak: float = 1e-4

    @classmethod
    def from_settings(cls, settings: Any) -> PromptLimits:
        """From :class:`cosyvoice.settings.Settings` (prompt_min_s, prompt_max_s, ...)."""
        max_s = float(settings.prompt_max_s)
        return cls(min_s=float(settings.prompt_min_s), max_s=max_s,
                   min_sr=int(settings.prompt_min_sr),
                   max_upload_bytes=int(float(settings.max_upload_mb) * MB),
                   max_file_s=max(2.0 * max_s, max_s + 30.0))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PromptLimits:
        return dataclass_from_dict(cls, data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def range_text(self) -> str:
        return f"{self.min_s:g}–{self.max_s:g} s"


@dataclass
class PromptAudio:
    """A validated prompt: mono float32 ``(T,)`` at ``sr``, trimmed and peak-normalized."""

    wav: np.ndarray
    sr: int
    duration_s: float
    speech_s: float
    original_sr: int
    notes: list[str] = field(default_factory=list)


def validate_prompt(path: str | os.PathLike, limits: PromptLimits | None = None,
                    vad: SileroVad | None = None, target_sr: int = 22050,
                    speakers: Callable[[], Any] | None = None) -> PromptAudio:
    """Check the recording at ``path`` and return it ready for voice analysis.

    Raises :class:`PromptError` (and nothing else) for any unusable file. ``vad`` is
    loaded on the spot when not given (pass the shared one in a server). ``speakers``
    returns the speaker encoder for the one-voice check (skipped, with a note, when it
    cannot be loaded; skipped silently when not given).
    """
    limits = limits or PromptLimits()
    path = Path(path)
    notes: list[str] = []
    _check_file(path, limits)
    info = _probe(path)
    _check_header(info, limits)
    _check_wav_complete(path)
    data, sr = _decode(path)
    mono = _check_samples(data, sr, limits, notes)
    vad = vad or SileroVad.load()
    start, end, speech_s = _trim_to_speech(mono, sr, vad, limits, notes)
    trimmed = mono[start:end]
    if speakers is not None:
        _check_one_voice(trimmed, sr, start / sr, vad, speakers, notes)
    wav = peak_normalize(resample(trimmed, sr, target_sr))
    if sr != target_sr:
        notes.append(f"resampled {sr} Hz → {target_sr} Hz")
    logger.info("prompt %s accepted: %.2f s, %.2f s speech, %d Hz", path.name,
                len(wav) / target_sr, speech_s, sr)
    return PromptAudio(wav=wav, sr=target_sr, duration_s=len(wav) / target_sr,
                       speech_s=speech_s, original_sr=sr, notes=notes)


# --- 1. the file --------------------------------------------------------------------------

def _check_file(path: Path, limits: PromptLimits) -> int:
    try:
        st = path.stat()
    except OSError as e:
        raise PromptError(f"the prompt audio file {path.name!r} was not found; "
                          "upload it again") from e
    if not path.is_file():
        raise PromptError(f"{path.name!r} is not a file; {FORMATS_HINT}")
    if st.st_size == 0:
        raise PromptError(f"the prompt audio file {path.name!r} is empty (0 bytes); "
                          f"{FORMATS_HINT} of {limits.range_text} of speech")
    if st.st_size > limits.max_upload_bytes:
        raise PromptError(
            f"the prompt audio file is {st.st_size / MB:.1f} MB; the limit is "
            f"{limits.max_upload_bytes / MB:g} MB — upload a shorter clip "
            f"({limits.range_text} of speech is enough) or a compressed one (FLAC or MP3)")
    return st.st_size


# --- 2. the header ------------------------------------------------------------------------

@dataclass(frozen=True)
class _Header:
    sr: int
    channels: int
    frames: int


def _probe(path: Path) -> _Header:
    try:
        info = sf.info(str(path))
    except Exception as e:
        raise PromptError(_unreadable_message(path)) from e
    return _Header(int(info.samplerate), int(info.channels), int(info.frames))


def _unreadable_message(path: Path) -> str:
    kind = _sniff(path)
    what = f"it looks like {kind}, not audio" if kind else "it is not audio or it is damaged"
    return f"could not read the prompt file {path.name!r}: {what} — {FORMATS_HINT}"


def _sniff(path: Path) -> str | None:
    """A word on what a non-audio file seems to be, from its first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    magic = {b"\x7fELF": "a program", b"MZ": "a program", b"%PDF": "a PDF document",
             b"PK\x03\x04": "a ZIP archive", b"\x89PNG": "an image", b"\xff\xd8\xff": "an image",
             b"GIF8": "an image", b"<": "a web page or XML file"}
    for prefix, kind in magic.items():
        if head.startswith(prefix):
            return kind
    text = head.decode("utf-8", errors="ignore")
    looks_text = len(text.encode()) >= 0.95 * len(head) and all(
        c.isprintable() or c.isspace() for c in text)
    return "a text file" if head and looks_text else None


def _check_header(info: _Header, limits: PromptLimits) -> None:
    sr, channels = info.sr, info.channels
    if sr > limits.max_sr:
        raise PromptError(f"the prompt file says its sample rate is {sr} Hz, which is not a "
                          "real recording rate (the file is probably damaged) — export it "
                          "again at 44.1 or 48 kHz")
    if sr < limits.min_sr:
        raise PromptError(
            f"the prompt audio is sampled at {sr} Hz; need at least {limits.min_sr} Hz — "
            "record or export it at 44.1 or 48 kHz (telephone-quality audio is too "
            "narrow-band to copy a voice)")
    if channels > limits.max_channels:
        raise PromptError(f"the prompt audio has {channels} channels; at most "
                          f"{limits.max_channels} are accepted — export it as mono or stereo")
    if info.frames <= 0:
        raise PromptError(f"the prompt file contains no audio samples; {FORMATS_HINT} "
                          f"of {limits.range_text} of speech")
    _check_file_length(info.frames / sr, limits)
    if info.frames * channels > limits.max_samples:
        raise PromptError(
            f"the prompt audio is too large to process ({channels} channels × "
            f"{_clock(info.frames / sr)} at {sr} Hz) — export {limits.range_text} of speech "
            "as mono or stereo at 44.1 or 48 kHz")


def _check_file_length(seconds: float, limits: PromptLimits) -> None:
    if seconds > limits.max_file_s:
        raise PromptError(
            f"the prompt audio is {_clock(seconds)} long; files over "
            f"{_clock(limits.max_file_s)} are not accepted and the prompt itself should be "
            f"{limits.range_text} of speech — cut out one or two sentences")


def _clock(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def _check_wav_complete(path: Path) -> None:
    """Reject a RIFF/WAVE file whose ``data`` chunk promises more bytes than the file has.

    libsndfile silently reads what is there, so a cut-off upload would look like a short
    recording; the user should rather be told to upload it again.
    """
    declared = _wav_data_end(path)
    if declared is None:
        return
    size = path.stat().st_size
    if declared > size + 1:            # +1: a pad byte may be missing after odd-sized data
        raise PromptError(
            f"the prompt WAV file is truncated: it holds {size} of {declared} bytes "
            "(the upload or the recording was cut off) — upload the complete file again")


def _wav_data_end(path: Path) -> int | None:
    """Byte offset where the WAV's ``data`` chunk ends according to its header, or None."""
    with open(path, "rb") as f:
        head = f.read(65536)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    pos = 12
    while pos + 8 <= len(head):
        chunk_id, size = head[pos:pos + 4], struct.unpack("<I", head[pos + 4:pos + 8])[0]
        if chunk_id == b"data":
            # 0 and 0xFFFFFFFF mark streamed files whose writer never filled in the size.
            return None if size in (0, 0xFFFFFFFF) else pos + 8 + size
        pos += 8 + size + (size & 1)
    return None


# --- 3. the samples -----------------------------------------------------------------------

def _decode(path: Path) -> tuple[np.ndarray, int]:
    try:
        return read_audio(path)
    except Exception as e:
        raise PromptError(_unreadable_message(path)) from e


def _check_samples(data: np.ndarray, sr: int, limits: PromptLimits,
                   notes: list[str]) -> np.ndarray:
    """``(T, C)`` decoded samples → checked mono ``(T,)``."""
    if data.size == 0:
        raise PromptError(f"the prompt file contains no audio samples; {FORMATS_HINT} "
                          f"of {limits.range_text} of speech")
    _check_file_length(data.shape[0] / sr, limits)
    if not np.isfinite(data).all():
        raise PromptError("the prompt audio contains invalid samples (NaN or infinity), "
                          "so the file is damaged — export it again as 16-bit or 24-bit PCM")
    peak = float(np.max(np.abs(data)))
    if peak < limits.silence_peak:
        raise PromptError("the prompt audio is silent — check that the microphone was on "
                          "and record yourself reading a sentence")
    _check_clipping(data, limits, notes)
    mono = to_mono(data)
    if data.shape[1] > 1:
        notes.append(_mix_note(data, mono))
    return mono


def clip_fraction(data: np.ndarray, level: float = 0.99, floor: float = 1e-3) -> float:
    """Share of the non-silent samples (``|x| > floor``) that sit at ``|x| >= level``."""
    mag = np.abs(data)
    active = int(np.count_nonzero(mag > floor))
    return float(np.count_nonzero(mag >= level)) / active if active else 0.0


def _check_clipping(data: np.ndarray, limits: PromptLimits, notes: list[str]) -> None:
    frac = clip_fraction(data)
    if frac > limits.max_clip_fraction:
        raise PromptError(
            f"the prompt audio is heavily clipped ({100 * frac:.1f} % of the samples are at "
            "full scale, so the voice is distorted) — record again with the input volume "
            "turned down or further from the microphone")
    if frac > 0.1 * limits.max_clip_fraction:
        notes.append(f"slight clipping: {100 * frac:.2f} % of samples at full scale")


def _mix_note(data: np.ndarray, mono: np.ndarray) -> str:
    rms = np.sqrt(np.mean(np.square(data, dtype=np.float64), axis=0))
    silent = int(np.count_nonzero(rms <= max(1e-4, 0.01 * float(rms.max()))))
    note = f"mixed {data.shape[1]} channels to mono"
    return note + f" (ignored {silent} silent channel{'s' * (silent > 1)})" if silent else note


# --- 4. speech ----------------------------------------------------------------------------

def _trim_to_speech(mono: np.ndarray, sr: int, vad: SileroVad, limits: PromptLimits,
                    notes: list[str]) -> tuple[int, int, float]:
    """Find speech, check its extent; returns ``(start, end)`` samples at ``sr`` and speech s."""
    vad_sr = vad.config.sample_rate
    segments = vad.speech_segments(resample(mono, sr, vad_sr))
    if not segments:
        raise PromptError("no speech was found in the prompt audio (it sounds like silence, "
                          "noise or music) — record yourself reading a sentence in a quiet room")
    speech_s = speech_seconds(segments, vad_sr)
    span_s = (segments[-1][1] - segments[0][0]) / vad_sr
    _check_duration(span_s, limits)
    if speech_s < limits.min_speech_ratio * span_s:
        raise PromptError(
            f"only {speech_s:.1f} s of the {span_s:.1f} s prompt is speech; the rest is "
            "pauses or background noise — record one person speaking continuously in a "
            "quiet room")
    start, end = _to_samples(segments, sr, vad_sr, len(mono))
    trimmed_s = (len(mono) - (end - start)) / sr
    if trimmed_s >= 0.05:
        notes.append(f"trimmed {trimmed_s:.1f} s of silence at the ends")
    _note_noise(mono, sr, segments, vad_sr, notes)
    return start, end, speech_s


def _check_one_voice(trimmed: np.ndarray, sr: int, offset_s: float, vad: SileroVad,
                     speakers: Callable[[], Any], notes: list[str]) -> None:
    from cosyvoice.speaker.turns import check_one_voice

    try:
        encoder = speakers()
    except ModelError as e:
        notes.append(f"could not check that the prompt is one voice ({e})")
        return
    # Times in the messages count from the start of the uploaded file.
    padded = np.concatenate([np.zeros(int(round(offset_s * sr)), np.float32), trimmed])
    check_one_voice(padded, sr, vad, encoder, notes)


def _check_duration(span_s: float, limits: PromptLimits) -> None:
    if span_s < limits.min_s:
        raise PromptError(
            f"prompt audio is {span_s:.1f} s of speech after trimming silence; need "
            f"{limits.range_text} — record a longer sentence")
    if span_s > limits.max_s:
        raise PromptError(
            f"prompt audio is {span_s:.1f} s of speech after trimming silence; need "
            f"{limits.range_text} — cut it to one or two sentences")


def _to_samples(segments: list[Segment], sr: int, vad_sr: int, n: int) -> tuple[int, int]:
    start = int(segments[0][0] * sr / vad_sr)
    end = min(n, math.ceil(segments[-1][1] * sr / vad_sr))
    return start, end


def _note_noise(mono: np.ndarray, sr: int, segments: list[Segment], vad_sr: int,
                notes: list[str]) -> None:
    """Note (not reject) a loud background: speech vs non-speech level, in dB."""
    mask = np.zeros(len(mono), dtype=bool)
    for s, e in segments:
        mask[int(s * sr / vad_sr):math.ceil(e * sr / vad_sr)] = True
    if mask.all() or not mask.any() or np.count_nonzero(~mask) < sr // 10:
        return
    speech = float(np.mean(np.square(mono[mask], dtype=np.float64)))
    noise = float(np.mean(np.square(mono[~mask], dtype=np.float64)))
    snr = 10 * math.log10(speech / max(noise, 1e-12))
    if snr < 10:
        notes.append(f"background noise is high (speech ≈ {snr:.0f} dB above it); "
                     "a quieter room gives a closer voice")
