"""Model inputs for zero-shot and cross-lingual synthesis from a folder's tokenizer and ONNX parts.

``zero_shot(text, prompt_text, prompt_16k, prompt_24k)`` gives what the LLM and the flow take:

- ``text`` / ``prompt_text``: (1, L) Qwen ids (the text is already normalised by our frontend);
- ``llm_prompt_speech_token`` = ``flow_prompt_speech_token``: (1, N) speech tokens of the prompt
  (16 kHz audio → Whisper log-mel → speech tokenizer);
- ``prompt_speech_feat``: (1, 2N, 80) log-mel of the 24 kHz prompt (the YAML's
  ``feat_extractor``); at 24 kHz the tokens and mel frames are cut to exactly 2 frames a token,
  ``N = min(frames // 2, tokens)``, as CosyVoice2/3 do;
- ``llm_embedding`` = ``flow_embedding``: (1, 192) CAM++ embedding of the 16 kHz prompt.

``cross_lingual`` is the same without the LLM's prompt (no prompt text, no LLM prompt tokens).
"""

from __future__ import annotations

import torch

from cosyvoice.runtime.features import prompt_mel
from cosyvoice.runtime.folder import TOKENIZER_DIR, ModelFolder
from cosyvoice.runtime.hparams import Tagged
from cosyvoice.runtime.onnx_parts import SpeakerEncoder, SpeechTokenizer
from cosyvoice.runtime.text_tokens import TextTokenizer


class CosyVoiceFrontend:
    """Text ids, prompt speech tokens, prompt mel and speaker embedding for one model folder."""

    def __init__(self, folder: ModelFolder):
        self.folder = folder
        self.text_tokenizer = TextTokenizer(folder.path / TOKENIZER_DIR, folder.version)
        self.speech_tokenizer = SpeechTokenizer(folder.speech_tokenizer)
        self.speaker = SpeakerEncoder(folder.path / "campplus.onnx")
        node = folder.hparams.doc.get("feat_extractor")
        self.mel_kwargs = dict(node.kwargs) if isinstance(node, Tagged) else {}
        self.sample_rate = folder.hparams.sample_rate

    def text_ids(self, text: str) -> torch.Tensor:
        return torch.tensor([self.text_tokenizer.encode(text)], dtype=torch.int32)

    def prompt(self, prompt_16k: torch.Tensor, prompt_24k: torch.Tensor) -> dict:
        """Speech tokens, mel and embedding of one prompt recording (at 16 and 24 kHz)."""
        tokens = self.speech_tokenizer.tokens(prompt_16k)
        feat = prompt_mel(prompt_24k, **self.mel_kwargs)
        if self.sample_rate == 24000:
            n = min(feat.shape[1] // 2, tokens.shape[1])
            tokens, feat = tokens[:, :n], feat[:, :2 * n]
        embedding = self.speaker.embedding(prompt_16k)
        return {"llm_prompt_speech_token": tokens, "flow_prompt_speech_token": tokens,
                "prompt_speech_feat": feat, "llm_embedding": embedding,
                "flow_embedding": embedding}

    def zero_shot(self, text: str, prompt_text: str, prompt_16k: torch.Tensor,
                  prompt_24k: torch.Tensor) -> dict:
        return {"text": self.text_ids(text), "prompt_text": self.text_ids(prompt_text),
                **self.prompt(prompt_16k, prompt_24k)}

    def cross_lingual(self, text: str, prompt_16k: torch.Tensor,
                      prompt_24k: torch.Tensor) -> dict:
        inputs = self.prompt(prompt_16k, prompt_24k)
        del inputs["llm_prompt_speech_token"]
        return {"text": self.text_ids(text), **inputs}
