"""The Synthesizer in-process with the real models: clone path, source profile, seeds."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.lifecycle.registry import default_specs
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from cosyvoice.settings import Settings

TEXT = "The cat sat on the warm mat. It was happy."


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Synthesizer:
    tmp = tmp_path_factory.mktemp("pipeline")
    settings = Settings(outputs_dir=tmp / "outputs", cache_dir=tmp / "cache",
                        log_dir=tmp / "logs", pidfile=tmp / "app.pid")
    settings.ensure_dirs()
    manager = ModelManager("cpu", default_specs(settings))
    return Synthesizer(manager, settings)


def test_clone_measures_the_source_voice_once_and_is_reproducible(synth, real_female_prompt):
    req = SynthesisRequest(text=TEXT, mode="clone", prompt_path=str(real_female_prompt),
                           seed=7)
    a = synth.synthesize(req)
    source = synth._source_profiles["acoustic_en"]
    b = synth.synthesize(req)
    assert synth._source_profiles["acoustic_en"] is source  # measured once, reused
    assert 70 < source.f0_median_hz < 160  # Piper's joe: a low male voice (~90 Hz)
    assert a.sentences == 2
    assert 1.5 < a.duration_s < 6.0  # 10 words
    assert np.sqrt(np.mean(a.wav ** 2)) > 0.01
    assert np.array_equal(a.wav, b.wav)  # same seed and inputs → same samples
    assert a.path.exists() and b.path.exists() and a.path != b.path


def test_clone_moves_pitch_toward_a_female_prompt(synth, real_female_prompt):
    from cosyvoice.voice.profile import VoiceProfile

    preset = synth.synthesize(SynthesisRequest(text=TEXT, seed=3))
    clone = synth.synthesize(SynthesisRequest(text=TEXT, mode="clone", seed=3,
                                              prompt_path=str(real_female_prompt)))
    f0_preset = VoiceProfile.from_audio(preset.wav, preset.sample_rate).f0_median_hz
    f0_clone = VoiceProfile.from_audio(clone.wav, clone.sample_rate).f0_median_hz
    assert f0_clone > 1.3 * f0_preset, (f0_preset, f0_clone)
