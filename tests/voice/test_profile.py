"""VoiceProfile on real recordings (gradio's bundled media assets)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from cosyvoice.audio.io import read_audio, to_mono
from cosyvoice.errors import PromptError
from cosyvoice.voice.profile import VoiceProfile


def _asset(name: str) -> tuple[np.ndarray, int]:
    spec = importlib.util.find_spec("gradio")
    assert spec is not None and spec.submodule_search_locations
    wav, sr = read_audio(Path(spec.submodule_search_locations[0]) / "media_assets" / "audio"
                         / name)
    return to_mono(wav), sr


@pytest.fixture(scope="module")
def female() -> VoiceProfile:
    return VoiceProfile.from_audio(*_asset("cate_blanch.mp3"))


@pytest.fixture(scope="module")
def male() -> VoiceProfile:
    return VoiceProfile.from_audio(*_asset("heath_ledger.mp3"))


def test_female_pitch_is_higher_than_male(female: VoiceProfile, male: VoiceProfile) -> None:
    assert 150.0 < female.f0_median_hz < 260.0
    assert 70.0 < male.f0_median_hz < 140.0
    assert female.f0_median_st - male.f0_median_st > 6.0


def test_female_formants_are_higher(female: VoiceProfile, male: VoiceProfile) -> None:
    assert male.formant_ratio(female) > 1.03
    assert female.formant_ratio(male) < 1.0


def test_fields_are_plausible(female: VoiceProfile) -> None:
    assert len(female.mel_mean) == len(female.mel_std) == 80
    assert 3.0 < female.f0_range_st < 30.0
    assert 0.2 < female.voiced_fraction <= 1.0
    assert 1.0 < female.syllable_rate < 8.0
    assert female.sample_rate == 32000
    assert female.bandwidth_hz == pytest.approx(11025.0)
    f1, f2, f3 = female.formants_hz
    assert 250 < f1 < f2 < f3 < 4000


def test_dict_round_trip_through_json(female: VoiceProfile) -> None:
    again = VoiceProfile.from_dict(json.loads(json.dumps(female.to_dict())))
    assert again == female


def test_incomplete_dict_is_a_prompt_error(female: VoiceProfile) -> None:
    d = female.to_dict()
    del d["mel_mean"]
    with pytest.raises(PromptError):
        VoiceProfile.from_dict(d)


def test_telephone_band_limits_bandwidth() -> None:
    wav, sr = _asset("cate_blanch.mp3")
    from cosyvoice.audio.io import resample

    p = VoiceProfile.from_audio(resample(wav, sr, 8000), 8000)
    assert p.bandwidth_hz == pytest.approx(4000.0)
    assert all(f < 3800 for f in p.formants_hz)


def test_noise_only_is_rejected() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(PromptError, match="voiced speech"):
        VoiceProfile.from_audio((0.01 * rng.standard_normal(22050 * 3)).astype(np.float32),
                                22050)
