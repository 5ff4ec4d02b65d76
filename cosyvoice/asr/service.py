"""Transcribe a prompt file: the same prompt checks as synthesis (format, 3–30 s of speech,
trimmed by the VAD), then the ``asr`` model. Used by the UI, the REST API and the CLI."""

from __future__ import annotations

import time
from pathlib import Path

from cosyvoice.asr.transcriber import SAMPLE_RATE, Transcript
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.speaker.validation import PromptLimits, validate_prompt


def transcribe_file(manager: ModelManager, path: str | Path, language: str | None = None,
                    limits: PromptLimits | None = None) -> Transcript:
    """What the recording at ``path`` says. PromptError (TranscriptionError among them)
    for a file the prompt checks refuse or a language the recognizer does not know;
    ModelError when no recognizer can be loaded."""
    t0 = time.perf_counter()
    asr = manager.get("asr")
    asr.check_language(language)  # refuse before the work when the language is known
    prompt = validate_prompt(path, limits, manager.get("vad"), target_sr=SAMPLE_RATE)
    out = asr.transcribe(prompt.wav, language)
    out.seconds = time.perf_counter() - t0
    return out
