"""Zero-shot and cross-lingual model inputs, and text → Qwen ids (CosyVoice's special tokens
included): ours against the reference frontend's, same folder, same prompt samples (a real
recording), same normalised texts. One oracle run per version serves both tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosyvoice.audio.io import read_audio, resample, to_mono
from cosyvoice.runtime.folder import check_folder
from cosyvoice.runtime.frontend import CosyVoiceFrontend, with_system_prompt
from cosyvoice.runtime.text_tokens import TextTokenizer

pytestmark = pytest.mark.oracle
TEXT = "收到好友从远方寄来的生日礼物，那份意外的惊喜让我心中充满了甜蜜。"
PROMPT_TEXT = {2: "Hello, this is a voice cloning test.",
               3: "You are a helpful assistant.<|endofprompt|>Hello, this is a voice cloning test."}


TEXTS = [
    "Hello, this is a voice cloning test.",
    "You are a helpful assistant.<|endofprompt|>希望你以后能够做的比我还好呦。",
    "[breath]收到好友从远方寄来的生日礼物，<strong>那份意外的惊喜</strong>[laughter]",
    "We read 2025 and 3.14 [AA1] [iàng] <|endofsystem|> <|im_start|>",
]
_REF: dict[int, dict] = {}


def reference(version: int, folder, prompt, oracle) -> dict:
    if version not in _REF:
        _REF[version] = oracle("frontend_zero_shot.py", folder=str(folder), text=TEXT,
                               prompt_text=PROMPT_TEXT[version], prompt_16k=load(prompt, 16000),
                               prompt_24k=load(prompt, 24000), texts=TEXTS,
                               cross_text=with_system_prompt(TEXT, version))
    return _REF[version]


def load(path, rate: int) -> torch.Tensor:
    wav, sr = read_audio(path)
    return torch.from_numpy(resample(to_mono(wav), sr, rate).astype(np.float32))[None]


@pytest.mark.parametrize("version", [2, 3])
def test_model_inputs_match_the_reference_frontend(version, real_male_prompt, oracle,
                                                   request) -> None:
    folder = request.getfixturevalue(f"tiny_v{version}")
    p16, p24 = load(real_male_prompt, 16000), load(real_male_prompt, 24000)
    ref = reference(version, folder, real_male_prompt, oracle)
    frontend = CosyVoiceFrontend(check_folder(folder, version))
    ours = {"zero_shot": frontend.zero_shot(TEXT, PROMPT_TEXT[version], p16, p24),
            "cross_lingual": frontend.cross_lingual(TEXT, p16, p24)}
    for mode in ("zero_shot", "cross_lingual"):
        want = {k: v for k, v in ref[mode].items() if not k.endswith("_len")}
        got = ours[mode]
        assert sorted(got) == sorted(want), mode
        for key in ("text", "prompt_text", "llm_prompt_speech_token", "flow_prompt_speech_token"):
            if key in want:
                assert torch.equal(got[key], want[key].to(got[key].dtype)), (mode, key)
        assert got["prompt_speech_feat"].shape == want["prompt_speech_feat"].shape
        assert 2 * got["flow_prompt_speech_token"].shape[1] == got["prompt_speech_feat"].shape[1]
        for key in ("prompt_speech_feat", "llm_embedding", "flow_embedding"):
            assert float((got[key] - want[key]).abs().max()) <= 1e-4, (mode, key)


@pytest.mark.parametrize("version", [2, 3])
def test_text_ids_match_the_reference_tokenizer(version, real_male_prompt, oracle,
                                                request) -> None:
    folder = request.getfixturevalue(f"tiny_v{version}")
    want = reference(version, folder, real_male_prompt, oracle)["text_ids"]
    tokenizer = TextTokenizer(folder / "CosyVoice-BlankEN", version)
    got = [tokenizer.encode(t) for t in TEXTS]
    assert got == want
    assert 151646 in got[1]  # <|endofprompt|>, the id CosyVoice3's LLM looks for
