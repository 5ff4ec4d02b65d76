"""Fixtures for the speaker tests: real models, real recordings, generated bad prompts."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from cosyvoice.speaker.vad import SileroVad

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "make_prompts.py"


def _load_make_prompts() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_prompts", FIXTURES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def make_prompts() -> ModuleType:
    return _load_make_prompts()


@pytest.fixture(scope="session")
def prompts(make_prompts, tmp_path_factory) -> dict[str, Path]:
    """Every generated prompt fixture, written once per session: ``{name: path}``."""
    return make_prompts.make_all(tmp_path_factory.mktemp("prompts"))


@pytest.fixture(scope="session")
def vad() -> SileroVad:
    return SileroVad.load()


class CountingVad(SileroVad):
    """The real Silero VAD, counting the samples it is asked to look at."""

    def __init__(self, inner: SileroVad) -> None:
        super().__init__(inner.session, inner.config)
        self.calls = 0
        self.samples = 0

    def speech_prob(self, wav16k: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.samples += len(wav16k)
        return super().speech_prob(wav16k)


@pytest.fixture
def counting_vad(vad) -> CountingVad:
    return CountingVad(vad)


@pytest.fixture(scope="session")
def recordings(make_prompts) -> dict[str, np.ndarray]:
    """The three real recordings as mono float32 at 16 kHz."""
    names = {"cate": "cate_blanch.mp3", "cate2": "cate_blanch_2.mp3", "heath": "heath_ledger.mp3"}
    return {key: make_prompts.load_real(name) for key, name in names.items()}
