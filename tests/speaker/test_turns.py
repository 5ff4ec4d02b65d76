"""The one-voice check (cosyvoice.speaker.turns) on real recordings shipped with gradio:
one person passes; two people joined or taking turns are refused, naming the windows;
one person from two recordings passes with a note."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from cosyvoice.errors import PromptError
from cosyvoice.speaker.encoder import SpeakerEncoder
from cosyvoice.speaker.turns import ONE_VOICE_MIN, split_voices
from cosyvoice.speaker.vad import SileroVad
from cosyvoice.speaker.validation import validate_prompt
from tests.fixtures.make_prompts import load_real

SR = 16000


@pytest.fixture(scope="module")
def models():
    return SileroVad.load(), SpeakerEncoder.load()


def _gap(s: float = 0.3) -> np.ndarray:
    return np.zeros(int(s * SR), np.float32)


def _clips():
    f, f2, m = (load_real(n) for n in ("cate_blanch.mp3", "cate_blanch_2.mp3",
                                       "heath_ledger.mp3"))
    return {
        "female": f,
        "female-male": np.concatenate([f[:4 * SR], _gap(), m]),
        "male-female": np.concatenate([m, _gap(), f2]),
        "taking-turns": np.concatenate([f[:2 * SR], _gap(), m[:2 * SR], _gap(),
                                        f[2 * SR:4 * SR], _gap(), m[2 * SR:]]),
        "female-two-recordings": np.concatenate([f, _gap(), f2]),
    }


@pytest.mark.parametrize("name", ["female-male", "male-female", "taking-turns"])
def test_two_voices_are_refused_naming_the_windows(models, tmp_path, name):
    vad, encoder = models
    path = tmp_path / f"{name}.wav"
    sf.write(path, np.concatenate([_gap(0.5), _clips()[name]]), SR)
    with pytest.raises(PromptError) as info:
        validate_prompt(path, vad=vad, speakers=lambda: encoder)
    message = str(info.value)
    assert "more than one voice" in message and "sounds like a different speaker" in message
    assert message.count(" s") >= 2 and "–" in message  # the time ranges of both groups
    assert "background noise" not in message
    split = split_voices(_clips()[name], SR, vad, encoder)
    assert split is not None and split.similarity < ONE_VOICE_MIN


def test_one_voice_passes_without_a_voice_note(models, tmp_path):
    vad, encoder = models
    path = tmp_path / "female.wav"
    sf.write(path, _clips()["female"], SR)
    prompt = validate_prompt(path, vad=vad, speakers=lambda: encoder)
    assert not [n for n in prompt.notes if "voice" in n], prompt.notes


def test_one_person_from_two_recordings_passes_with_a_note(models, tmp_path):
    vad, encoder = models
    path = tmp_path / "two-recordings.wav"
    sf.write(path, _clips()["female-two-recordings"], SR)
    prompt = validate_prompt(path, vad=vad, speakers=lambda: encoder)
    assert any("sound like different voices" in n for n in prompt.notes), prompt.notes


def test_without_an_encoder_the_check_is_skipped_and_said(models, tmp_path):
    from cosyvoice.errors import ModelError

    vad, _ = models
    path = tmp_path / "turns.wav"
    sf.write(path, _clips()["taking-turns"], SR)

    def missing():
        raise ModelError("speaker encoder weights not found")

    prompt = validate_prompt(path, vad=vad, speakers=missing)
    assert any("could not check that the prompt is one voice" in n for n in prompt.notes)
