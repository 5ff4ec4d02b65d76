"""Pronunciation overrides reach the loaded engines, end to end through the Synthesizer:
an inline ``{word|reading}`` and the same entry in the user lexicon give the same audio, the
reading changes the audio (a longer reading, longer audio), and without it the audio is the
G2P's own again. Kokoro (the default voices, English and Mandarin) and CosyVoice3 (a tiny
random folder, seeded: the reading becomes phone tokens in the LLM's text). Baker and Piper:
tests/frontend/test_pronunciation.py and the server tests."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice.pipeline import SynthesisRequest
from tests.conftest import local_services, require_kokoro

pytestmark = pytest.mark.slow


def _speak(synth, text: str, **fields) -> np.ndarray:
    return synth.synthesize(SynthesisRequest(text=text, **fields)).wav


def _check(synth, template: str, word: str, reading: str, longer: str | None = None,
           **fields) -> None:
    inline = _speak(synth, template.format(f"{{{word}|{reading}}}"), **fields)
    plain = _speak(synth, template.format(word), **fields)
    assert not np.array_equal(inline, plain)  # the reading is not the G2P's own
    if longer is not None:  # more phones read, more audio
        assert len(_speak(synth, template.format(f"{{{word}|{longer}}}"), **fields)) > \
            len(inline)
    synth.lexicon.put(word, reading)
    try:
        from_lexicon = _speak(synth, template.format(word), **fields)
    finally:
        synth.lexicon.delete(word)
    assert np.array_equal(from_lexicon, inline)  # one path for inline and lexicon
    assert np.array_equal(_speak(synth, template.format(word), **fields), plain)


@pytest.fixture(scope="module")
def kokoro_synth(tmp_path_factory):
    require_kokoro()
    return local_services(tmp_path_factory.mktemp("overrides-kokoro")).synth


def test_kokoro_english_reads_the_arpabet_given(kokoro_synth):
    _check(kokoro_synth, "I met {} at the station.", "Nguyen", "W IH1 N",
           longer="N UW1 W IH1 N IH0 N AH0 N W IH1 N", voice="af_heart")


def test_kokoro_mandarin_reads_the_pinyin_given(kokoro_synth):
    _check(kokoro_synth, "这件事很{}，我们再谈。", "重要", "chong2 yao4", voice="zm_yunxi")


@pytest.fixture(scope="module")
def cosyvoice_synth(tmp_path_factory, cv_folder_v3):
    return local_services(tmp_path_factory.mktemp("overrides-cv3"), engine="cosyvoice3",
                          model_dir=str(cv_folder_v3)).synth


def test_cosyvoice3_gets_the_phone_tokens(cosyvoice_synth):
    _check(cosyvoice_synth, "这件事很{}。", "重要", "zhong4 yao4", voice="tiny-female",
           seed=5, engine="cosyvoice3")
