"""The one-voice check (cosyvoice.speaker.turns) on real recordings shipped with gradio
(Cate Blanchett, female; Heath Ledger, male) and Kokoro voices: two people — joined 50/50
or 70/30, taking turns, of the same sex — are refused, naming their times, which never
overlap; one person — with long pauses, with pitch changes, from two recordings — passes."""

from __future__ import annotations

import re

import numpy as np
import pytest
import soundfile as sf

from cosyvoice.errors import PromptError
from cosyvoice.speaker.encoder import SpeakerEncoder
from cosyvoice.speaker.turns import SAME_VOICE_NOTE, split_voices
from cosyvoice.speaker.vad import SileroVad
from cosyvoice.speaker.validation import validate_prompt
from tests.fixtures.make_prompts import load_real

SR = 16000
KOKORO_TEXT = ("The fish twisted and turned on the bent hook. A large size in stockings is "
               "hard to sell.")


@pytest.fixture(scope="module")
def models():
    return SileroVad.load(), SpeakerEncoder.load()


@pytest.fixture(scope="module")
def kokoro_voices():
    """``{voice: (T,) 16 kHz}``: a woman and a man of Kokoro reading two sentences."""
    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.audio.io import resample
    from tests.conftest import require_kokoro

    model = KokoroModel.load(require_kokoro())
    out = {}
    for voice in ("af_heart", "am_adam"):
        wav = model.speaker(voice, "en-us").synthesize(KOKORO_TEXT)
        out[voice] = resample(wav.wav, wav.sample_rate, SR)
    return out


def _gap(s: float = 0.3) -> np.ndarray:
    return np.zeros(int(s * SR), np.float32)


def _cut(x: np.ndarray, seconds: float) -> np.ndarray:
    return x[:int(seconds * SR)]


def _real():
    return {n: load_real(f) for n, f in (("f", "cate_blanch.mp3"), ("f2", "cate_blanch_2.mp3"),
                                         ("m", "heath_ledger.mp3"))}


def _two_real():
    r = _real()
    f, f2, m = r["f"], r["f2"], r["m"]
    return {
        "female-male 50/50": np.concatenate([_cut(f, 3.5), _gap(), m]),
        "female-male 70/30": np.concatenate([f, _gap(), m]),
        "male-female 30/70": np.concatenate([m, _gap(), f2, _gap(), _cut(f, 4)]),
        "taking turns": np.concatenate([f[:2 * SR], _gap(), m[:2 * SR], _gap(),
                                        f[2 * SR:4 * SR], _gap(), m[2 * SR:]]),
    }


def _one_real():
    r = _real()
    f, f2, m = r["f"], r["f2"], r["m"]
    pieces = np.array_split(f, 4)
    return {
        "female": f,
        "female, second clip": f2,
        "male twice": np.concatenate([m, _gap(0.5), m]),
        "female with long pauses": np.concatenate(
            [p for piece in pieces for p in (piece, _gap(1.2))][:-1]),
        "male three times with pauses": np.concatenate([m, _gap(1.0), m, _gap(1.0), m]),
    }


def _refused(path, vad, encoder) -> str:
    with pytest.raises(PromptError) as info:
        validate_prompt(path, vad=vad, speakers=lambda: encoder)
    return str(info.value)


def _assert_times_apart(message: str) -> None:
    """The message names both voices' time ranges, and none of them overlap."""
    other, main = message.split("sounds like a different speaker from")
    spans = [[(float(a), float(b)) for a, b in re.findall(r"(\d+\.\d)–(\d+\.\d) s", part)]
             for part in (other, main)]
    assert spans[0] and spans[1], message
    for a0, a1 in spans[0]:
        for b0, b1 in spans[1]:
            assert a1 <= b0 or b1 <= a0, f"{(a0, a1)} overlaps {(b0, b1)}: {message}"


@pytest.mark.parametrize("name", list(_two_real()))
def test_two_voices_are_refused_naming_the_windows(models, tmp_path, name):
    vad, encoder = models
    path = tmp_path / "two.wav"
    sf.write(path, np.concatenate([_gap(0.5), _two_real()[name]]), SR)
    message = _refused(path, vad, encoder)
    assert "more than one voice" in message and "sounds like a different speaker" in message
    assert "background noise" not in message
    _assert_times_apart(message)


@pytest.mark.parametrize("sex", ["two women", "two men"])
def test_two_voices_of_the_same_sex_are_refused(models, kokoro_voices, tmp_path, sex):
    """A real voice joined with a synthetic one of the same sex and about the same pitch:
    their F0 cannot tell them apart, the speaker encoder does."""
    vad, encoder = models
    real = _real()["f"] if sex == "two women" else _real()["m"]
    other = kokoro_voices["af_heart" if sex == "two women" else "am_adam"]
    n = min(len(real), len(other), 6 * SR)  # about 50/50
    path = tmp_path / "same-sex.wav"
    sf.write(path, np.concatenate([real[:n], _gap(), other[:n]]), SR)
    _assert_times_apart(_refused(path, vad, encoder))


@pytest.mark.parametrize("name", list(_one_real()))
def test_one_person_passes_without_a_voice_note(models, tmp_path, name):
    vad, encoder = models
    path = tmp_path / "one.wav"
    sf.write(path, _one_real()[name], SR)
    prompt = validate_prompt(path, vad=vad, speakers=lambda: encoder)
    assert not [n for n in prompt.notes if "different voices" in n], prompt.notes


def test_one_synthetic_voice_with_pauses_and_changes_of_pace_passes(models, kokoro_voices):
    """Kokoro reading at its own pace, slowly and quickly (its F0 contour changes with
    them), with pauses between."""
    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.audio.io import resample

    vad, encoder = models
    model = KokoroModel.load()
    for voice, wav in kokoro_voices.items():
        speaker = model.speaker(voice, "en-us")
        paced = [resample(out.wav, out.sample_rate, SR) for out in (
            speaker.synthesize("Are you sure?", speed=0.8),
            speaker.synthesize("Press the pants and sew a button on the vest.", speed=1.3))]
        prompt = np.concatenate([wav, _gap(1.0), paced[0], _gap(0.6), paced[1]])
        split = split_voices(prompt, SR, vad, encoder)
        assert split is not None and split.similarity >= SAME_VOICE_NOTE, (voice, split)


def test_one_person_from_two_recordings_passes_with_a_note(models, tmp_path):
    vad, encoder = models
    r = _real()
    path = tmp_path / "two-recordings.wav"
    sf.write(path, np.concatenate([r["f"], _gap(), r["f2"]]), SR)
    prompt = validate_prompt(path, vad=vad, speakers=lambda: encoder)
    notes = [n for n in prompt.notes if "sound like different voices" in n]
    assert notes, prompt.notes
    _assert_times_apart(notes[0])


def test_the_groups_time_ranges_never_overlap(models):
    vad, encoder = models
    for name, wav in {**_two_real(), **_one_real()}.items():
        split = split_voices(wav, SR, vad, encoder)
        assert split is not None, name
        for a0, a1 in split.main:
            for b0, b1 in split.other:
                assert a1 <= b0 or b1 <= a0, (name, split.main, split.other)


def test_without_an_encoder_the_check_is_skipped_and_said(models, tmp_path):
    from cosyvoice.errors import ModelError

    vad, _ = models
    path = tmp_path / "turns.wav"
    sf.write(path, _two_real()["taking turns"], SR)

    def missing():
        raise ModelError("speaker encoder weights not found")

    prompt = validate_prompt(path, vad=vad, speakers=missing)
    assert any("could not check that the prompt is one voice" in n for n in prompt.notes)
