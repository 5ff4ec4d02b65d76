"""Our Whisper log-mel and Kaldi fbank against the reference frontend's, on real recordings; the
speech tokens and CAM++ embedding from the folder's ONNX files through both frontends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from cosyvoice.audio.io import read_audio, resample, to_mono
from cosyvoice.runtime.features import campplus_input, kaldi_fbank, whisper_log_mel
from cosyvoice.runtime.onnx_parts import PromptAudioError, SpeakerEncoder, SpeechTokenizer

ALSA = Path("/usr/share/sounds/alsa/Front_Center.wav")


@pytest.fixture(scope="module")
def prompts(real_female_prompt, real_male_prompt) -> list[torch.Tensor]:
    """Real speech at 16 kHz: Cate Blanchett 8.4 s, Heath Ledger 3.5 s (and ALSA's voice)."""
    paths = [real_female_prompt, real_male_prompt] + ([ALSA] if ALSA.exists() else [])
    out = []
    for path in paths:
        wav, sr = read_audio(path)
        out.append(torch.from_numpy(resample(to_mono(wav), sr, 16000).astype(np.float32))[None])
    return out


@pytest.mark.oracle
def test_features_tokens_and_embedding_match_the_reference_frontend(prompts, tiny_v2, oracle
                                                                    ) -> None:
    ref = oracle("frontend_features.py", folder=str(tiny_v2), audios=prompts)["results"]
    tokenizer = SpeechTokenizer(tiny_v2 / "speech_tokenizer_v2.onnx")
    speaker = SpeakerEncoder(tiny_v2 / "campplus.onnx")
    for audio, want in zip(prompts, ref, strict=True):
        log_mel = whisper_log_mel(audio)
        assert log_mel.shape == want["log_mel"].shape
        assert float((log_mel - want["log_mel"]).abs().max()) <= 1e-4
        fbank = campplus_input(audio)
        assert fbank.shape == want["campplus_input"].shape
        assert float((fbank - want["campplus_input"]).abs().max()) <= 1e-4
        assert torch.equal(tokenizer.tokens(audio), want["speech_token"])
        assert float((speaker.embedding(audio) - want["embedding"]).abs().max()) <= 1e-5


def test_fbank_frames_and_log_floor() -> None:
    # 25 ms frames every 10 ms, edges snipped: 1 s at 16 kHz gives 98 frames; silence sits on
    # the float32-epsilon floor of the log.
    feats = kaldi_fbank(torch.zeros(1, 16000))
    assert feats.shape == (98, 80)
    assert torch.allclose(feats, torch.full_like(feats, float(np.log(np.finfo(np.float32).eps))))


def test_whisper_log_mel_has_100_frames_a_second() -> None:
    tone = torch.sin(torch.arange(16000) / 16000 * 2 * np.pi * 440)[None]
    mel = whisper_log_mel(tone)
    assert mel.shape == (1, 128, 100)
    assert float(mel.max() - mel.min()) <= 2.0 + 1e-6  # 8 decades, scaled by 1/4


def test_speech_tokenizer_refuses_over_30_seconds(tiny_v2) -> None:
    tokenizer = SpeechTokenizer(tiny_v2 / "speech_tokenizer_v2.onnx")
    assert tokenizer.tokens(torch.zeros(1, 16000)).shape == (1, 25)
    with pytest.raises(PromptAudioError, match="30 s"):
        tokenizer.tokens(torch.zeros(1, 16000 * 31))
