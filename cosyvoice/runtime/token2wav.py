"""Speech tokens → waveform for one request, whole or in streamed chunks (the reference's
``token2wav`` of CosyVoice2Model / CosyVoice3Model, with the per-request state kept here instead of
in dicts on the shared model).

Each call passes *all* tokens so far and the ``offset`` (in tokens) of the first one not yet
vocoded; the flow recomputes the mel from the start (its attention is chunk-causal when
streaming) and the mel from ``offset`` on is new.

- CosyVoice2 (non-causal HiFT): the last 8 mel frames of each chunk are vocoded again at the
  start of the next one, with the excitation of those frames carried over (``cache_source``),
  and the two renderings of that overlap are cross-faded with a Hamming window (8·480 samples).
  A chunk therefore holds back its last 8·480 samples until the next one (or the end) comes.
- CosyVoice3 (causal HiFT): the whole mel so far is vocoded at each call (``finalize=False``
  keeps look-ahead frames back) and the samples already given out are skipped.

``speed`` stretches the mel by linear interpolation before vocoding; only for a whole utterance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from cosyvoice.runtime.flow import CausalFlow
from cosyvoice.runtime.hift import HiFTGenerator

MEL_CACHE_FRAMES = 8  # CosyVoice2: mel frames vocoded again at each join


def crossfade(wave: torch.Tensor, previous: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
    """``wave``'s first n samples faded in over ``previous``'s last n (n = len(window) / 2),
    computed in float64 with the window as the reference does. (1, L) -> (1, L)."""
    n = window.numel() // 2
    out = wave.clone()
    mixed = (wave[..., :n].double() * window[:n].to(wave.device)
             + previous[..., -n:].double() * window[n:].to(wave.device))
    out[..., :n] = mixed.to(wave.dtype)
    return out


@dataclass
class _HiFTCache:
    mel: torch.Tensor  # (1, 80, 8)
    source: torch.Tensor  # (1, 1, 8·480)
    speech: torch.Tensor  # (1, 8·480)


class Token2Wav:
    """One request's token → waveform state. ``__call__(tokens, offset, finalize, streaming)``
    returns the new samples (1, L) float32."""

    def __init__(self, flow: CausalFlow, hift: HiFTGenerator, prompt_token: torch.Tensor,
                 prompt_feat: torch.Tensor, embedding: torch.Tensor,
                 generator: torch.Generator | None = None) -> None:
        param = next(flow.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.flow, self.hift = flow, hift
        self.prompt_token = prompt_token.to(self.device, torch.int32)
        self.prompt_feat = prompt_feat.to(self.device, self.dtype)
        self.embedding = embedding.to(self.device, self.dtype)
        self.generator = generator
        self.ratio = flow.config.token_mel_ratio

    @torch.inference_mode()
    def mel(self, tokens: torch.Tensor, offset: int, finalize: bool,
            streaming: bool) -> torch.Tensor:
        """Mel (1, 80, T) of the tokens from ``offset`` on (all ``tokens`` (1, N) passed)."""
        tokens = tokens.to(self.device, torch.int32)
        mel = self.flow.inference(
            tokens, torch.tensor([tokens.size(1)], device=self.device),
            self.prompt_token, torch.tensor([self.prompt_token.size(1)], device=self.device),
            self.prompt_feat, self.embedding, streaming=streaming, finalize=finalize)
        return mel[:, :, offset * self.ratio:].float()

    def __call__(self, tokens: torch.Tensor, offset: int, finalize: bool, streaming: bool,
                 speed: float = 1.0) -> torch.Tensor:
        return self.vocode(self.mel(tokens, offset, finalize, streaming), finalize, speed)

    def vocode(self, mel: torch.Tensor, finalize: bool, speed: float = 1.0) -> torch.Tensor:
        raise NotImplementedError

    @staticmethod
    def stretch(mel: torch.Tensor, speed: float) -> torch.Tensor:
        if speed == 1.0:
            return mel
        return F.interpolate(mel, size=int(mel.shape[2] / speed), mode="linear")


class Token2WavV2(Token2Wav):
    """CosyVoice2: HiFT mel and source caches and a cross-fade at each join."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.overlap = MEL_CACHE_FRAMES * self.hift.config.samples_per_frame
        self.window = torch.from_numpy(np.hamming(2 * self.overlap))
        self.cache: _HiFTCache | None = None

    @torch.inference_mode()
    def vocode(self, mel: torch.Tensor, finalize: bool, speed: float = 1.0) -> torch.Tensor:
        cache_source = None
        if self.cache is not None:
            mel = torch.cat([self.cache.mel, mel], dim=2)
            cache_source = self.cache.source
        elif finalize:
            mel = self.stretch(mel, speed)
        wave, source = self.hift.inference(mel, cache_source=cache_source,
                                           generator=self.generator)
        if self.cache is not None:
            wave = crossfade(wave, self.cache.speech, self.window)
        if finalize:
            self.cache = None
            return wave
        n = self.overlap
        self.cache = _HiFTCache(mel[:, :, -MEL_CACHE_FRAMES:], source[:, :, -n:], wave[:, -n:])
        return wave[:, :-n]


class Token2WavV3(Token2Wav):
    """CosyVoice3: the causal HiFT vocodes all mel so far; samples already out are skipped."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.mel_so_far: torch.Tensor | None = None
        self.samples_out = 0

    @torch.inference_mode()
    def vocode(self, mel: torch.Tensor, finalize: bool, speed: float = 1.0) -> torch.Tensor:
        if self.mel_so_far is not None:
            mel = torch.cat([self.mel_so_far, mel], dim=2)
        self.mel_so_far = mel
        wave, _ = self.hift.inference(self.stretch(mel, speed), finalize=finalize,
                                      generator=self.generator)
        wave = wave[:, self.samples_out:]
        self.samples_out += wave.shape[1]
        return wave


def token2wav(version: int, *args, **kwargs) -> Token2Wav:
    """The request state for CosyVoice ``version`` (2 or 3)."""
    return (Token2WavV2 if version == 2 else Token2WavV3)(*args, **kwargs)
