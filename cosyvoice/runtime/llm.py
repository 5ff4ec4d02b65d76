"""The CosyVoice2/3 speech-token language model: Qwen2 with CosyVoice's embeddings and head.

Input sequence (one utterance), all as embeddings of width ``llm_input_size``:

    [sos] [prompt text + text (Qwen token embeddings)] [task id] [prompt speech tokens]

then one speech token per step, each fed back through ``speech_embedding``. CosyVoice2
(``Qwen2LM``) takes sos/task id from a 2-row ``llm_embedding`` (rows 0 and 1) and its head scores
``speech_token_size + 3`` classes, of which ``speech_token_size + 0..2`` stop decoding.
CosyVoice3 (``CosyVoice3LM``) has no ``llm_embedding``: sos = ``speech_embedding[S]``, task id =
``speech_embedding[S + 2]`` (S = speech_token_size), a bias-free head of ``S + 200`` classes, and
every id from S up stops decoding; its text must contain ``<|endofprompt|>`` (id 151646).

Stop rules: at least ``int(text_len * min_token_text_ratio)`` and at most
``int(text_len * max_token_text_ratio)`` tokens (``text_len`` without the prompt text); below the
minimum, class S is masked before sampling (the reference masks S in both versions — in v3 that is
the sos id, so a v3 decode may stop early on S + 1..).

The module's parameter names are the released ``llm.pt``'s: the Qwen2 model sits at ``llm.model``
(a ``transformers`` ``Qwen2ForCausalLM`` built from ``CosyVoice-BlankEN/config.json``).
Decoding runs the Qwen2 body (not its 151,936-way LM head, which CosyVoice does not use) with a
``DynamicCache``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import DynamicCache, Qwen2Config, Qwen2ForCausalLM

from cosyvoice.runtime.hparams import LLMConfig

END_OF_PROMPT_ID = 151646  # <|endofprompt|> in CosyVoice's Qwen tokenizer (v3 instructions)


class LLMInputError(ValueError):
    """Inputs the LLM cannot decode (the message says what to change)."""


def qwen_config(blank_en: str | Path) -> Qwen2Config:
    """The Qwen2 hyper-parameters of a model folder's ``CosyVoice-BlankEN/config.json``."""
    path = Path(blank_en) / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("torch_dtype", None)
    data.pop("dtype", None)
    return Qwen2Config(**data)


class _QwenHolder(nn.Module):
    """Keeps the released key prefix ``llm.model.*`` (the reference wraps Qwen2 the same way)."""

    def __init__(self, config: Qwen2Config):
        super().__init__()
        self.model = Qwen2ForCausalLM(config)


@dataclass
class StopRule:
    min_len: int
    max_len: int

    @classmethod
    def for_text(cls, text_len: int, min_ratio: float = 2, max_ratio: float = 20) -> StopRule:
        return cls(int(text_len * min_ratio), int(text_len * max_ratio))


class CosyVoiceLM(nn.Module):
    """``llm.pt``'s module. ``step``/``decode`` are the inference entry points."""

    def __init__(self, config: LLMConfig, qwen: Qwen2Config):
        super().__init__()
        if qwen.hidden_size != config.llm_input_size:
            raise LLMInputError(f"CosyVoice-BlankEN hidden_size {qwen.hidden_size} != YAML "
                                f"llm_input_size {config.llm_input_size}")
        self.config = config
        size = config.speech_token_size
        self.version = config.version
        self.llm = _QwenHolder(qwen)
        if config.version == 2:
            self.llm_embedding = nn.Embedding(2, config.llm_input_size)
            classes = size + 3
            self.llm_decoder = nn.Linear(config.llm_output_size, classes)
            self.sos_row, self.task_row = None, None
        else:
            classes = size + 200
            self.llm_decoder = nn.Linear(config.llm_output_size, classes, bias=False)
            self.sos_row, self.task_row = size, size + 2
        self.speech_embedding = nn.Embedding(classes, config.llm_input_size)
        self.stop_ids = frozenset(range(size, classes))

    # --- inputs -------------------------------------------------------------------------
    def _special(self, which: str) -> torch.Tensor:
        """(1, 1, D) embedding of sos or task id."""
        if self.version == 2:
            row = 0 if which == "sos" else 1
            return self.llm_embedding.weight[row].reshape(1, 1, -1)
        row = self.sos_row if which == "sos" else self.task_row
        return self.speech_embedding.weight[row].reshape(1, 1, -1)

    def text_embedding(self, ids: torch.Tensor) -> torch.Tensor:
        return self.llm.model.model.embed_tokens(ids)

    def prompt_input(self, text: torch.Tensor, prompt_text: torch.Tensor,
                     prompt_speech: torch.Tensor) -> torch.Tensor:
        """(1, T, D) decoder input. ``text``/``prompt_text``: (1, L) Qwen ids; ``prompt_speech``:
        (1, N) speech tokens (N may be 0)."""
        all_text = torch.cat([prompt_text, text], dim=1)
        if self.version == 3 and not bool((all_text == END_OF_PROMPT_ID).any()):
            raise LLMInputError(
                "CosyVoice3 needs <|endofprompt|> in the text or prompt text "
                "(e.g. 'You are a helpful assistant.<|endofprompt|>') / "
                "CosyVoice3 的文本或提示文本中必须包含 <|endofprompt|>")
        text_emb = self.text_embedding(all_text)
        if prompt_speech.shape[1] > 0:
            speech_emb = self.speech_embedding(prompt_speech)
        else:
            speech_emb = text_emb.new_zeros(1, 0, text_emb.shape[-1])
        return torch.cat([self._special("sos"), text_emb, self._special("task"), speech_emb],
                         dim=1)

    # --- one step -----------------------------------------------------------------------
    def step(self, inputs: torch.Tensor, cache: DynamicCache | None
             ) -> tuple[torch.Tensor, DynamicCache]:
        """Feed (1, T, D) embeddings after ``cache``; return last position's log-probabilities
        (classes,) and the grown cache."""
        if cache is None:
            cache = DynamicCache(config=self.llm.model.config)
        out = self.llm.model.model(inputs_embeds=inputs, cache=cache, use_cache=True)
        logits = self.llm_decoder(out.last_hidden_state[:, -1])
        return logits.log_softmax(dim=-1).squeeze(0), cache

    def token_input(self, token: int) -> torch.Tensor:
        return self.speech_embedding.weight[token].reshape(1, 1, -1)

    # --- decoding -----------------------------------------------------------------------
    @torch.inference_mode()
    def decode(self, lm_input: torch.Tensor, rule: StopRule,
               sampler: Callable[[torch.Tensor, list[int]], int],
               on_step: Callable[[int, torch.Tensor], None] | None = None,
               forced: list[int] | None = None) -> Iterator[int]:
        """Yield speech tokens until a stop id or ``rule.max_len``.

        ``on_step(i, logp)`` sees each step's log-probabilities before masking; ``forced``
        (tests) replaces the sampled tokens by given ones, so logits can be compared along a
        fixed path.
        """
        decoded: list[int] = []
        cache = None
        inputs = lm_input
        for i in range(rule.max_len):
            logp, cache = self.step(inputs, cache)
            if on_step is not None:
                on_step(i, logp)
            if forced is not None:
                if i >= len(forced):
                    return
                token = forced[i]
            else:
                if i < rule.min_len:
                    logp = logp.clone()
                    logp[self.config.speech_token_size] = -float("inf")
                token = sampler(logp, decoded)
            if token in self.stop_ids:
                return
            yield token
            decoded.append(token)
            inputs = self.token_input(token)

    def inference(self, text: torch.Tensor, prompt_text: torch.Tensor,
                  prompt_speech: torch.Tensor, sampler: Callable, min_ratio: float = 2,
                  max_ratio: float = 20, **kwargs) -> Iterator[int]:
        """Speech tokens for ``text`` (1, L) after the prompt (the reference's ``inference``)."""
        rule = StopRule.for_text(text.shape[1], min_ratio, max_ratio)
        return self.decode(self.prompt_input(text, prompt_text, prompt_speech), rule, sampler,
                           **kwargs)
