"""The ``asr`` model: a Whisper recognizer (faster-whisper) and the language rule.

The rule: a language the loaded recognizer does not know is refused with a message in
English and Chinese ("no recognizer for Mandarin is installed; type the transcript"), never
guessed. The multilingual recognizer detects the language (or takes the one asked for); the
English-only one takes "en" or auto, and in auto mode refuses a recording it cannot read
as English (its decoder's mean log-probability below :data:`EN_MIN_LOGPROB`, a decode that
repeats itself, or no text): an English-only Whisper turns Mandarin into fluent English it
invented ("Thank you for watching") with a low log-probability, or into a loop
("20,000,000,…") with a high one — see docs/transcription.md for the measurement.

Decoding is deterministic (temperature 0, beam 5): Whisper's fallback to sampling at higher
temperatures, for a decode it judges failed, drew a different text each time, so the same
Mandarin prompt was refused on one run and taken as "Cheers" on the next. On speech the
recognizer reads the fallback never started (16 Mandarin prompts, whisper-base: the same text
with and without it).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosyvoice.asr.recognizers import Recognizer, choose
from cosyvoice.errors import PromptError

logger = logging.getLogger(__name__)

SAMPLE_RATE = 16000  # Whisper's input rate
BEAM_SIZE = 5
EN_MIN_LOGPROB = -0.8  # English-only auto mode: below this the speech is not taken as English
# A segment whose text compresses (zlib) by more than this repeats itself: Whisper's own
# "failed decode" bound. Speech read as speech measured 0.86–1.14.
MAX_COMPRESSION = 2.4
ALIASES = {"auto": None, "": None, "mandarin": "zh", "chinese": "zh", "cmn": "zh",
           "zh-cn": "zh", "zh-hans": "zh", "中文": "zh", "普通话": "zh", "汉语": "zh",
           "english": "en", "en-us": "en", "en-gb": "en", "英语": "en", "英文": "en"}
NAMES = {"zh": ("Mandarin", "普通话"), "en": ("English", "英语"), "ja": ("Japanese", "日语"),
         "ko": ("Korean", "韩语"), "fr": ("French", "法语"), "de": ("German", "德语"),
         "es": ("Spanish", "西班牙语"), "ru": ("Russian", "俄语"), "it": ("Italian", "意大利语"),
         "pt": ("Portuguese", "葡萄牙语")}


class TranscriptionError(PromptError):
    """The prompt cannot be transcribed by the installed recognizer (its language, or no
    speech it can read); the user types the transcript instead. ``logprob``: the English
    decoder's mean log-probability where that was the reason."""

    logprob: float | None = None


@dataclass
class Transcript:
    """What a prompt says, in ``language`` (ISO 639-1, e.g. ``en``, ``zh``).

    ``seconds``: wall time of the whole transcription (prompt checks included);
    ``recognize_s`` of the recognizer alone; ``audio_s``: the trimmed speech it heard."""

    text: str
    language: str
    language_probability: float
    recognizer: str
    audio_s: float
    seconds: float = 0.0
    recognize_s: float = 0.0
    logprob: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("language_probability", "audio_s", "seconds", "recognize_s", "logprob"):
            out[key] = round(out[key], 3)
        return out


def normalize_language(language: str | None) -> str | None:
    """``None`` for auto; else a lower-case code (``Mandarin`` → ``zh``)."""
    key = (language or "").strip().lower()
    return ALIASES.get(key, key) or None


def language_name(code: str) -> tuple[str, str]:
    """(English, Chinese) name of a language code, the code itself when unknown."""
    return NAMES.get(code, (code, code))


def unsupported(code: str, recognizer: Recognizer) -> TranscriptionError:
    en, zh = language_name(code)
    known = "English only" if recognizer.english_only else "its languages"
    return TranscriptionError(
        f"no recognizer for {en} is installed (the {recognizer.name} recognizer knows "
        f"{known}); type the transcript / 未安装{zh}识别模型，请手动输入提示音频的文字")


class Transcriber:
    """One loaded recognizer. :meth:`transcribe` takes 16 kHz mono float32 ``(T,)``."""

    def __init__(self, recognizer: Recognizer, model: Any, device: str) -> None:
        self.recognizer = recognizer
        self.model = model
        self.device = device

    @classmethod
    def load(cls, models_dir: Path, choice: str = "auto", device: str = "cpu",
             threads: int = 0) -> Transcriber:
        from faster_whisper import WhisperModel

        recognizer = choose(models_dir, choice)
        folder = recognizer.folder(models_dir)
        cuda = device.startswith("cuda")
        model = WhisperModel(str(folder), device="cuda" if cuda else "cpu",
                             device_index=int(device.split(":")[1]) if ":" in device else 0,
                             compute_type="float16" if cuda else "int8",
                             cpu_threads=threads or os.cpu_count() or 1)
        logger.info("recognizer %s loaded from %s", recognizer.name, folder)
        return cls(recognizer, model, device)

    @property
    def languages(self) -> list[str]:
        return list(self.model.supported_languages)

    def check_language(self, language: str | None) -> str | None:
        """The language to decode in (None: detect); TranscriptionError for one the
        recognizer does not know."""
        code = normalize_language(language)
        if code is not None and code not in self.languages:
            raise unsupported(code, self.recognizer)
        return code

    def transcribe(self, wav16k: np.ndarray, language: str | None = None) -> Transcript:
        code = self.check_language(language)
        t0 = time.perf_counter()
        segments, info = self.model.transcribe(
            np.ascontiguousarray(wav16k, dtype=np.float32), language=code,
            beam_size=BEAM_SIZE, vad_filter=False, condition_on_previous_text=False,
            temperature=0.0)
        segments = list(segments)
        text = "".join(s.text for s in segments).strip()
        logprob = _mean_logprob(segments)
        out = Transcript(text=text, language=info.language,
                         language_probability=float(info.language_probability),
                         recognizer=self.recognizer.name, audio_s=len(wav16k) / SAMPLE_RATE,
                         recognize_s=time.perf_counter() - t0, logprob=logprob)
        looped = any(s.compression_ratio > MAX_COMPRESSION for s in segments)
        self._check_result(out, code, looped)
        if out.language == "zh":
            out.text = to_simplified(out.text)
        return out

    def _check_result(self, out: Transcript, code: str | None, looped: bool) -> None:
        if self.recognizer.english_only and code is None and (
                not out.text or out.logprob < EN_MIN_LOGPROB or looped):
            logger.info("English-only recognizer refused: logprob %.2f, text %r",
                        out.logprob, out.text[:80])
            error = TranscriptionError(
                "the prompt does not sound like English, and the installed recognizer "
                f"({self.recognizer.name}) knows English only: no recognizer for Mandarin or "
                "other languages is installed; type the transcript / 提示音频听起来不是英语，"
                "而已安装的识别模型只识别英语（未安装普通话等其他语言的识别模型），请手动输入文字")
            error.logprob = out.logprob  # for benchmarks; the message stays plain
            raise error
        if not out.text:
            raise TranscriptionError("the recognizer heard no words in the prompt; type the "
                                     "transcript / 未识别出文字，请手动输入提示音频的文字")
        if looped:
            raise TranscriptionError("the recognizer could not read the prompt (its text "
                                     "repeats itself); type the transcript / 无法识别提示音频"
                                     "（识别结果不断重复），请手动输入文字")


def _mean_logprob(segments: list[Any]) -> float:
    """The decoder's mean token log-probability over all segments (weighted by length)."""
    if not segments:
        return float("-inf")
    weights = [max(len(s.tokens), 1) for s in segments]
    return float(np.average([s.avg_logprob for s in segments], weights=weights))


@functools.lru_cache(maxsize=1)
def _t2s() -> Any:
    import opencc  # opencc-python-reimplemented (a frontend dependency already)

    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """Whisper often writes Mandarin in traditional characters; the app reads simplified."""
    return _t2s().convert(text)
