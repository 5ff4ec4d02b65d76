"""Fixtures of the transcription tests: prompts of known text, one manager per recognizer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.asr.known_prompts import EN_TEXT, ZH_TEXT, recognizer_manager, speak


@pytest.fixture(scope="session")
def en_prompt(tmp_path_factory) -> Path:
    """English (Piper joe), about 5 s, text :data:`EN_TEXT`."""
    return speak(tmp_path_factory.mktemp("asr-en"), "joe", EN_TEXT, "joe")


@pytest.fixture(scope="session")
def zh_prompt(tmp_path_factory) -> Path:
    """Mandarin (Baker FastSpeech2), about 8 s, text :data:`ZH_TEXT`."""
    return speak(tmp_path_factory.mktemp("asr-zh"), "baker", ZH_TEXT, "baker")


@pytest.fixture(scope="session")
def english_only():
    """A manager whose recognizer is the English-only tiny.en."""
    return recognizer_manager("whisper-tiny.en")


@pytest.fixture(scope="session")
def multilingual():
    """A manager whose recognizer is the multilingual base (installed by run.sh's setup)."""
    from cosyvoice.asr.recognizers import MULTILINGUAL
    from cosyvoice.settings import Settings

    if not MULTILINGUAL.installed(Settings().models_dir):
        pytest.fail("models/whisper-base is missing: run `bash run.sh --setup-only`")
    return recognizer_manager("whisper-base")
