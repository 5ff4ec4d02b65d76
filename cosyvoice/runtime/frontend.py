"""Model inputs for every synthesis mode from a folder's tokenizer and ONNX parts.

``zero_shot(text, prompt_text, prompt_16k, prompt_24k)`` gives what the LLM and the flow take:

- ``text`` / ``prompt_text``: (1, L) Qwen ids (the text is already normalised by our frontend);
- ``llm_prompt_speech_token`` = ``flow_prompt_speech_token``: (1, N) speech tokens of the prompt
  (16 kHz audio → Whisper log-mel → speech tokenizer);
- ``prompt_speech_feat``: (1, 2N, 80) log-mel of the 24 kHz prompt (the YAML's
  ``feat_extractor``); at 24 kHz the tokens and mel frames are cut to exactly 2 frames a token,
  ``N = min(frames // 2, tokens)``, as CosyVoice2/3 do;
- ``llm_embedding`` = ``flow_embedding``: (1, 192) CAM++ embedding of the 16 kHz prompt.

The other modes, as the reference's frontend builds them (what each drops from the LLM's prompt):

- ``cross_lingual``: no prompt text and no LLM prompt tokens (the flow keeps the prompt);
- ``instruct2``: the instruction is the LLM's prompt text, with no LLM prompt tokens;
- ``sft``: a preset voice's embedding only (``text``, ``llm_embedding``, ``flow_embedding``);
- ``vc``: the source recording's speech tokens replace the LLM (``source_speech_token``), the
  prompt's tokens/mel/embedding go to the flow — here the prompt's tokens and mel are *not* cut
  to 2 frames a token (the reference's ``frontend_vc`` does not cut them);
- ``voice``: a prompt in ``spk2info`` form (the zero-shot inputs without ``text``, with the
  reference's ``*_len`` entries), which ``with_voice`` turns back into any mode's inputs.

CosyVoice3's LLM needs ``<|endofprompt|>`` before the text it speaks: a system prompt
``You are a helpful assistant.<|endofprompt|>`` is put before the prompt text (zero-shot) or the
text (cross-lingual, sft) unless the text already has one; an instruction becomes
``You are a helpful assistant. <instruction><|endofprompt|>`` (CosyVoice2:
``<instruction><|endofprompt|>``).
"""

from __future__ import annotations

import torch

from cosyvoice.runtime.features import prompt_mel
from cosyvoice.runtime.folder import TOKENIZER_DIR, ModelFolder
from cosyvoice.runtime.hparams import Tagged
from cosyvoice.runtime.onnx_parts import SpeakerEncoder, SpeechTokenizer
from cosyvoice.runtime.text_tokens import TextTokenizer

END_OF_PROMPT = "<|endofprompt|>"
SYSTEM_PROMPT = "You are a helpful assistant."
INSTRUCT_MODES = ("zero_shot", "cross_lingual", "instruct2")
LLM_PROMPT_KEYS = ("prompt_text", "llm_prompt_speech_token")


class ModelInputError(ValueError):
    """Inputs that cannot be built (unknown voice or mode...); the message says what to change."""


def _error(en: str, zh: str) -> ModelInputError:
    return ModelInputError(f"{en} / {zh}")


def instruction_prompt(instruction: str, version: int) -> str:
    """The LLM prompt text of an instruction, in the version's format."""
    instruction = instruction.strip()
    if END_OF_PROMPT in instruction:
        return instruction
    if version == 3:
        return f"{SYSTEM_PROMPT} {instruction}{END_OF_PROMPT}"
    return f"{instruction}{END_OF_PROMPT}"


def with_system_prompt(text: str, version: int) -> str:
    """CosyVoice3: ``text`` after the system prompt (unless it has ``<|endofprompt|>``)."""
    if version == 3 and END_OF_PROMPT not in text:
        return f"{SYSTEM_PROMPT}{END_OF_PROMPT}{text}"
    return text


def without_lengths(inputs: dict) -> dict:
    """The inputs without the reference's ``*_len`` entries (lengths are the tensors' own)."""
    return {k: v for k, v in inputs.items() if not k.endswith("_len")}


class CosyVoiceFrontend:
    """Text ids, prompt speech tokens, prompt mel and speaker embedding for one model folder."""

    def __init__(self, folder: ModelFolder):
        self.folder = folder
        self.version = folder.version
        self.text_tokenizer = TextTokenizer(folder.path / TOKENIZER_DIR, folder.version)
        self.speech_tokenizer = SpeechTokenizer(folder.speech_tokenizer)
        self.speaker = SpeakerEncoder(folder.path / "campplus.onnx")
        node = folder.hparams.doc.get("feat_extractor")
        self.mel_kwargs = dict(node.kwargs) if isinstance(node, Tagged) else {}
        self.sample_rate = folder.hparams.sample_rate

    def text_ids(self, text: str) -> torch.Tensor:
        return torch.tensor([self.text_tokenizer.encode(text)], dtype=torch.int32)

    def prompt(self, prompt_16k: torch.Tensor, prompt_24k: torch.Tensor,
               cut: bool = True) -> dict:
        """Speech tokens, mel and embedding of one prompt recording (at 16 and 24 kHz);
        ``cut``: tokens and mel frames cut to 2 frames a token (24 kHz models)."""
        tokens = self.speech_tokenizer.tokens(prompt_16k)
        feat = prompt_mel(prompt_24k, **self.mel_kwargs)
        if cut and self.sample_rate == 24000:
            n = min(feat.shape[1] // 2, tokens.shape[1])
            tokens, feat = tokens[:, :n], feat[:, :2 * n]
        embedding = self.speaker.embedding(prompt_16k)
        return {"llm_prompt_speech_token": tokens, "flow_prompt_speech_token": tokens,
                "prompt_speech_feat": feat, "llm_embedding": embedding,
                "flow_embedding": embedding}

    # --- modes with a prompt recording ---------------------------------------------------
    def zero_shot(self, text: str, prompt_text: str, prompt_16k: torch.Tensor,
                  prompt_24k: torch.Tensor) -> dict:
        return {"text": self.text_ids(text),
                "prompt_text": self.text_ids(with_system_prompt(prompt_text, self.version)),
                **self.prompt(prompt_16k, prompt_24k)}

    def cross_lingual(self, text: str, prompt_16k: torch.Tensor,
                      prompt_24k: torch.Tensor) -> dict:
        inputs = self.prompt(prompt_16k, prompt_24k)
        del inputs["llm_prompt_speech_token"]
        return {"text": self.text_ids(with_system_prompt(text, self.version)), **inputs}

    def instruct2(self, text: str, instruction: str, prompt_16k: torch.Tensor,
                  prompt_24k: torch.Tensor) -> dict:
        inputs = self.prompt(prompt_16k, prompt_24k)
        del inputs["llm_prompt_speech_token"]
        return {"text": self.text_ids(text),
                "prompt_text": self.text_ids(instruction_prompt(instruction, self.version)),
                **inputs}

    def vc(self, source_16k: torch.Tensor, prompt_16k: torch.Tensor,
           prompt_24k: torch.Tensor) -> dict:
        inputs = self.prompt(prompt_16k, prompt_24k, cut=False)
        del inputs["llm_prompt_speech_token"], inputs["llm_embedding"]
        return {"source_speech_token": self.speech_tokenizer.tokens(source_16k), **inputs}

    # --- saved and preset voices ---------------------------------------------------------
    def voice(self, prompt_16k: torch.Tensor, prompt_24k: torch.Tensor,
              prompt_text: str = "") -> dict:
        """A prompt in ``spk2info`` form (as the reference's ``add_zero_shot_spk`` stores it)."""
        inputs = self.prompt(prompt_16k, prompt_24k)
        inputs["prompt_text"] = self.text_ids(
            with_system_prompt(prompt_text, self.version) if prompt_text.strip() else "")
        for key in ("prompt_text", "llm_prompt_speech_token", "flow_prompt_speech_token",
                    "prompt_speech_feat"):
            inputs[f"{key}_len"] = torch.tensor([inputs[key].shape[1]], dtype=torch.int32)
        return inputs

    def sft(self, text: str, voice: dict) -> dict:
        """A preset voice (``spk2info`` entry with ``embedding``): its embedding only."""
        embedding = voice["embedding"].reshape(1, -1).float()
        return {"text": self.text_ids(with_system_prompt(text, self.version)),
                "llm_embedding": embedding, "flow_embedding": embedding}

    def with_voice(self, text: str, voice: dict, mode: str = "zero_shot",
                   instruction: str = "") -> dict:
        """Inputs of ``mode`` for a saved voice (zero-shot form) or a preset one (``embedding``).

        A voice saved without its transcript speaks zero-shot requests cross-lingually (the LLM
        cannot use prompt speech without its text). An instruction replaces the voice's prompt
        text (the reference's ``instruct2`` with a saved speaker keeps the saved prompt text and
        drops the instruction; we do not copy that).
        """
        if mode not in INSTRUCT_MODES:
            raise _error(f"unknown mode {mode!r}; modes with a voice are "
                         f"{', '.join(INSTRUCT_MODES)}",
                         f"未知模式 {mode!r}；可用模式：{', '.join(INSTRUCT_MODES)}")
        if mode == "instruct2" and not instruction.strip():
            raise _error("instruct2 needs an instruction", "instruct2 模式需要指令文本")
        if "embedding" in voice and "flow_embedding" not in voice:
            inputs = self.sft(text, voice)
            if mode == "instruct2":
                inputs["text"] = self.text_ids(text)
                inputs["prompt_text"] = self.text_ids(instruction_prompt(instruction,
                                                                         self.version))
            return inputs
        missing = [k for k in ("flow_prompt_speech_token", "prompt_speech_feat",
                               "flow_embedding") if k not in voice]
        if missing:
            raise _error(f"the voice lacks {', '.join(missing)}; save it again from its prompt",
                         f"音色缺少 {', '.join(missing)}，请用提示音频重新保存")
        inputs = without_lengths(voice)
        inputs.setdefault("llm_embedding", inputs["flow_embedding"])
        if mode == "zero_shot" and not self._has_transcript(inputs):
            mode = "cross_lingual"
        if mode == "zero_shot":
            return {**inputs, "text": self.text_ids(text)}
        for key in LLM_PROMPT_KEYS:
            inputs.pop(key, None)
        if mode == "cross_lingual":
            return {**inputs, "text": self.text_ids(with_system_prompt(text, self.version))}
        return {**inputs, "text": self.text_ids(text),
                "prompt_text": self.text_ids(instruction_prompt(instruction, self.version))}

    def _has_transcript(self, voice: dict) -> bool:
        ids = voice.get("prompt_text")
        if ids is None or ids.shape[1] == 0 or "llm_prompt_speech_token" not in voice:
            return False
        system = self.text_ids(with_system_prompt("", self.version))
        return not torch.equal(ids.to(torch.int32), system)
