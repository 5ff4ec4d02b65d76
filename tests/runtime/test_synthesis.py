"""CosyVoiceSynth without the oracle's outputs: the streaming hop schedule, silence capping,
the cross-fade, and the errors a caller can meet (each a ValueError with an English and a Chinese
message). The folder tests load the tiny random folders (built by the oracle once per session)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosyvoice.runtime.folder import ModelFolderError
from cosyvoice.runtime.frontend import ModelInputError
from cosyvoice.runtime.synthesis import (
    MAX_SILENT_RUN,
    CosyVoiceSynth,
    HopSchedule,
    SynthesisError,
    drop_long_silences,
)
from cosyvoice.runtime.token2wav import crossfade
from tests.runtime.conftest import folder_copy


def chunk_ends(prompt_tokens: int, decoded: int) -> list[int]:
    schedule, ends = HopSchedule.for_prompt(prompt_tokens, chunk=25, lookahead=3), []
    for n in range(1, decoded + 1):
        while schedule.ready(n):
            ends.append(schedule.end())
            schedule.advance()
    return ends


def test_hops_pad_the_first_to_the_prompt_then_double_up_to_100() -> None:
    assert chunk_ends(30, 400) == [48, 98, 198, 298, 398]  # 45 (30 + 45 = 75), 50, 100, 100
    assert chunk_ends(0, 200) == [28, 78, 178]  # 25, 50, 100
    assert chunk_ends(50, 27) == []  # 25 + 3 look-ahead tokens not there yet


def test_silent_runs_are_capped() -> None:
    silent = frozenset({1, 2})
    tokens = [5, 1, 2, 1, 2, 1, 2, 1, 9, 1, 1]
    kept = list(drop_long_silences(iter(tokens), silent))
    assert kept == [5, 1, 2, 1, 2, 1, 9, 1, 1]
    assert MAX_SILENT_RUN == 5


def test_crossfade_is_the_hamming_overlap_add() -> None:
    gen = torch.Generator().manual_seed(0)
    wave, previous = torch.randn(1, 20, generator=gen), torch.randn(1, 12, generator=gen)
    window = np.hamming(8)
    out = crossfade(wave, previous, torch.from_numpy(window))
    want = wave.numpy().astype(np.float64)
    want[:, :4] = want[:, :4] * window[:4] + previous.numpy()[:, -4:] * window[4:]
    assert np.array_equal(out.numpy(), want.astype(np.float32))
    assert torch.equal(out[:, 4:], wave[:, 4:])


@pytest.fixture(scope="module")
def synth2(tiny_v2):
    return CosyVoiceSynth.load(tiny_v2, 2)


@pytest.fixture(scope="module")
def prompt() -> dict:
    t16, t24 = torch.arange(16000) / 16000, torch.arange(24000) / 24000
    voice = lambda t: (0.3 * torch.sin(2 * torch.pi * 140 * t)).float()[None]  # noqa: E731
    return {"prompt_16k": voice(t16), "prompt_24k": voice(t24)}


def test_bad_requests_are_refused_with_a_reason(synth2, prompt) -> None:
    inputs = synth2.cross_lingual("Hi.", **prompt)
    with pytest.raises(SynthesisError, match="non-streamed synthesis / "):
        synth2.tts(inputs, stream=True, speed=1.5)
    with pytest.raises(SynthesisError, match="text is empty"):
        synth2.tts({**inputs, "text": torch.zeros(1, 0, dtype=torch.int32)})
    with pytest.raises(SynthesisError, match="flow_embedding"):
        synth2.tts({"text": inputs["text"]})
    with pytest.raises(SynthesisError, match="preset voices: random-voice"):
        synth2.sft("Hi.", "nobody")
    with pytest.raises(SynthesisError, match="instruction"):
        synth2.instruct2("Hi.", " ", **prompt)
    with pytest.raises(ModelInputError, match="unknown mode"):
        synth2.with_voice("Hi.", synth2.voice(**prompt), "sing")
    assert issubclass(SynthesisError, ValueError)


def test_cosyvoice3_needs_its_end_of_prompt(tiny_v3, prompt) -> None:
    synth = CosyVoiceSynth.load(tiny_v3, 3)
    inputs = synth.cross_lingual("Hi.", **prompt)
    assert 151646 in inputs["text"][0].tolist()  # the system prompt's <|endofprompt|>
    synth.speech_tokens(inputs, seed=1)  # decodes
    plain = {**inputs, "text": synth.frontend.text_ids("Hi.")}
    with pytest.raises(SynthesisError, match="<\\|endofprompt\\|>"):
        synth.tts(plain)


def test_saved_voices(synth2, prompt) -> None:
    """A voice without its transcript speaks zero-shot requests cross-lingually; an instruction
    replaces the saved prompt text."""
    bare = synth2.voice(**prompt)
    assert sorted(synth2.with_voice("Hi.", bare)) == sorted(synth2.cross_lingual("Hi.", **prompt))
    told = synth2.with_voice("Hi.", synth2.voice(**prompt, prompt_text="Hello."), "instruct2",
                             instruction="Speak slowly.")
    direct = synth2.instruct2("Hi.", "Speak slowly.", **prompt)
    assert sorted(told) == sorted(direct)
    assert all(torch.equal(told[k], direct[k]) for k in direct)


def test_close_frees_and_refuses(tiny_v2, prompt) -> None:
    synth = CosyVoiceSynth.load(tiny_v2, 2)
    inputs = synth.cross_lingual("Hi.", **prompt)
    synth.close()
    assert synth.llm is None and synth.flow is None and synth.hift is None
    with pytest.raises(SynthesisError, match="closed"):
        synth.tts(inputs)


def test_bad_folders_raise_model_folder_errors(tiny_v2, tmp_path) -> None:
    with pytest.raises(ModelFolderError, match="CosyVoice2 folder"):
        CosyVoiceSynth.load(tiny_v2, 3)
    broken = folder_copy(tiny_v2, tmp_path / "broken", replace=("spk2info.pt",))
    (broken / "spk2info.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ModelFolderError, match="spk2info.pt is damaged or not a PyTorch file"):
        CosyVoiceSynth.load(broken, 2)
    (broken / "spk2info.pt").unlink()
    assert CosyVoiceSynth.load(broken, 2).speakers == []
