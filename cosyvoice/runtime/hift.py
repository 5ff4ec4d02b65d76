"""HiFT: the neural-source-filter + iSTFT vocoder of CosyVoice2 (``HiFTGenerator``) and its
causal variant of Fun-CosyVoice3 (``CausalHiFTGenerator``). Mel (1, 80, T) at 50 Hz ->
waveform (1, 480·T) at 24 kHz. ``state_dict`` keys and shapes equal the released ``hift.pt``.

Streaming: v2 takes ``cache_source`` (the source of the previous call's overlap, so the
excitation is continuous); v3 takes ``finalize=False`` while more mel will come, and then
treats the last frames as look-ahead context only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from cosyvoice.runtime.hift_layers import (
    CausalConv1d,
    CausalDownsample,
    CausalUpsample,
    F0Predictor,
    ResBlock,
)
from cosyvoice.runtime.hift_source import ConstructionDraws, SineSource
from cosyvoice.runtime.node_args import kwargs_of

if TYPE_CHECKING:
    from cosyvoice.runtime.flow import FlowConfig


@dataclass
class HiFTConfig:
    """Hyper-parameters named as in the released YAML's ``hift:`` block."""

    causal: bool = False
    in_channels: int = 80
    base_channels: int = 512
    nb_harmonics: int = 8
    sampling_rate: int = 24000
    nsf_alpha: float = 0.1
    nsf_sigma: float = 0.003
    nsf_voiced_threshold: float = 10
    upsample_rates: list[int] = field(default_factory=lambda: [8, 5, 3])
    upsample_kernel_sizes: list[int] = field(default_factory=lambda: [16, 11, 7])
    n_fft: int = 16
    hop_len: int = 4
    resblock_kernel_sizes: list[int] = field(default_factory=lambda: [3, 7, 11])
    resblock_dilation_sizes: list[list[int]] = field(default_factory=lambda: [[1, 3, 5]] * 3)
    source_resblock_kernel_sizes: list[int] = field(default_factory=lambda: [7, 7, 11])
    source_resblock_dilation_sizes: list[list[int]] = field(default_factory=lambda: [[1, 3, 5]] * 3)
    lrelu_slope: float = 0.1
    audio_limit: float = 0.99
    conv_pre_look_right: int = 4
    f0_cond_channels: int = 512

    @classmethod
    def from_tagged(cls, node: Any) -> HiFTConfig:
        """Read the YAML's ``hift: !new:...`` node as data (see ``hparams``)."""
        kinds = {"HiFTGenerator": False, "CausalHiFTGenerator": True}
        name = getattr(node, "class_name", None)
        if name not in kinds:
            raise ValueError(f"hift is {getattr(node, 'target', name)!r}; this runtime builds "
                             "HiFTGenerator (CosyVoice2) or CausalHiFTGenerator (CosyVoice3)")
        hift = kwargs_of(node)
        names = set(cls.__dataclass_fields__) - {"causal", "n_fft", "hop_len", "f0_cond_channels"}
        values: dict[str, Any] = {k: hift[k] for k in names if k in hift}
        istft = kwargs_of(hift.get("istft_params"))
        f0 = kwargs_of(hift.get("f0_predictor"))
        return cls(causal=kinds[name], n_fft=int(istft.get("n_fft", 16)),
                   hop_len=int(istft.get("hop_len", 4)),
                   f0_cond_channels=int(f0.get("cond_channels", 512)), **values)

    @property
    def samples_per_frame(self) -> int:
        return math.prod(self.upsample_rates) * self.hop_len


class HiFTGenerator(nn.Module):
    """F0 predictor -> sine source -> conv generator fused with the source's STFT -> iSTFT."""

    def __init__(self, config: HiFTConfig, draws: ConstructionDraws | None = None) -> None:
        """``draws``: the sizes the causal source's noise replay needs (the released v3 sizes
        with this config's F0 predictor when None)."""
        super().__init__()
        c = self.config = config
        causal = c.causal
        draws = draws or ConstructionDraws(f0_in_channels=c.in_channels,
                                           f0_cond_channels=c.f0_cond_channels)
        self.m_source = SineSource(c.sampling_rate, c.samples_per_frame, c.nb_harmonics,
                                   c.nsf_alpha, c.nsf_sigma, c.nsf_voiced_threshold,
                                   causal=causal, draws=draws)
        if causal:
            self.conv_pre = weight_norm(CausalConv1d(c.in_channels, c.base_channels,
                                                     c.conv_pre_look_right + 1, side="right"))
        else:
            self.conv_pre = weight_norm(nn.Conv1d(c.in_channels, c.base_channels, 7, 1, padding=3))
        self.ups = nn.ModuleList()
        for i, (u, k) in enumerate(zip(c.upsample_rates, c.upsample_kernel_sizes)):
            cin, cout = c.base_channels // (2 ** i), c.base_channels // (2 ** (i + 1))
            if causal:
                up = CausalUpsample(cin, cout, k, u)
            else:
                up = nn.ConvTranspose1d(cin, cout, k, u, padding=(k - u) // 2)
            self.ups.append(weight_norm(up))
        self.source_downs = nn.ModuleList()
        self.source_resblocks = nn.ModuleList()
        rates = [1] + c.upsample_rates[::-1][:-1]
        cum_rates = [math.prod(rates[:i + 1]) for i in range(len(rates))][::-1]
        spec = c.n_fft + 2
        for i, (u, k, d) in enumerate(zip(cum_rates, c.source_resblock_kernel_sizes,
                                          c.source_resblock_dilation_sizes)):
            ch = c.base_channels // (2 ** (i + 1))
            if u == 1:
                down = CausalConv1d(spec, ch, 1) if causal else nn.Conv1d(spec, ch, 1, 1)
            elif causal:
                down = CausalDownsample(spec, ch, u * 2, u)
            else:
                down = nn.Conv1d(spec, ch, u * 2, u, padding=u // 2)
            self.source_downs.append(down)
            self.source_resblocks.append(ResBlock(ch, k, d, causal))
        self.resblocks = nn.ModuleList()
        for i in range(len(self.ups)):
            ch = c.base_channels // (2 ** (i + 1))
            for k, d in zip(c.resblock_kernel_sizes, c.resblock_dilation_sizes):
                self.resblocks.append(ResBlock(ch, k, d, causal))
        post = CausalConv1d(ch, spec, 7) if causal else nn.Conv1d(ch, spec, 7, 1, padding=3)
        self.conv_post = weight_norm(post)
        self.f0_predictor = F0Predictor(c.in_channels, c.f0_cond_channels, causal=causal)
        window = torch.hann_window(c.n_fft, periodic=True, dtype=torch.float64).float()
        self.register_buffer("stft_window", window, persistent=False)

    def _stft(self, x: torch.Tensor) -> torch.Tensor:
        """Source (B, L) -> [real | imag] (B, n_fft + 2, frames)."""
        c = self.config
        spec = torch.stft(x, c.n_fft, c.hop_len, c.n_fft, window=self.stft_window,
                          return_complex=True)
        spec = torch.view_as_real(spec)
        return torch.cat([spec[..., 0], spec[..., 1]], dim=1)

    def _istft(self, magnitude: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        c = self.config
        magnitude = torch.clip(magnitude, max=1e2)
        spec = torch.complex(magnitude * torch.cos(phase), magnitude * torch.sin(phase))
        return torch.istft(spec, c.n_fft, c.hop_len, c.n_fft, window=self.stft_window)

    def decode(self, x: torch.Tensor, source: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        """Mel (B, 80, T) + source (B, 1, L) -> waveform (B, L')."""
        c = self.config
        s_stft = self._stft(source.squeeze(1))
        if c.causal and not finalize:
            look = c.conv_pre_look_right
            x = self.conv_pre(x[:, :, :-look], x[:, :, -look:])
            s_stft = s_stft[:, :, :-math.prod(c.upsample_rates) * look]
        else:
            x = self.conv_pre(x)
        kernels = len(c.resblock_kernel_sizes)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, c.lrelu_slope))
            if i == len(self.ups) - 1:
                x = F.pad(x, (1, 0), mode="reflect")
            x = x + self.source_resblocks[i](self.source_downs[i](s_stft))
            mixed = self.resblocks[i * kernels](x)
            for j in range(1, kernels):
                mixed = mixed + self.resblocks[i * kernels + j](x)
            x = mixed / kernels
        x = self.conv_post(F.leaky_relu(x))
        bins = c.n_fft // 2 + 1
        wave = self._istft(torch.exp(x[:, :bins, :]), torch.sin(x[:, bins:, :]))
        if c.causal and not finalize:
            wave = wave[:, :-c.samples_per_frame]
        return torch.clamp(wave, -c.audio_limit, c.audio_limit)

    def source(self, mel: torch.Tensor, finalize: bool = True,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Mel (B, 80, T) -> excitation (B, 1, 480·T') from the predicted F0."""
        if self.config.causal:
            # as released: the causal F0 predictor runs in float64 (its precision matters)
            self.f0_predictor.to(torch.float64)
            f0 = self.f0_predictor(mel.to(torch.float64), finalize=finalize).to(mel)
        else:
            f0 = self.f0_predictor(mel)
        f0 = F.interpolate(f0[:, None], scale_factor=float(self.config.samples_per_frame),
                           mode="nearest")
        return self.m_source(f0.transpose(1, 2), generator=generator).transpose(1, 2)

    @torch.inference_mode()
    def inference(self, mel: torch.Tensor, cache_source: torch.Tensor | None = None,
                  finalize: bool = True, generator: torch.Generator | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mel (1, 80, T) -> (waveform (1, L), source (1, 1, L_source)).

        v2: ``cache_source`` (1, 1, n) overwrites the first n source samples (the overlap
        with the previous chunk). v3: ``finalize=False`` keeps the last frames as context.
        """
        if not self.config.causal and not finalize:
            raise ValueError("the non-causal HiFT (CosyVoice2) streams with cache_source, "
                             "not finalize=False")
        source = self.source(mel, finalize, generator)
        if cache_source is not None and cache_source.size(2) > 0:
            source[:, :, :cache_source.size(2)] = cache_source
        if self.config.causal and not finalize:
            mel = mel[:, :, :-self.f0_predictor.lookahead]
        return self.decode(mel, source, finalize), source


def build_hift(config: HiFTConfig, flow: FlowConfig | None = None) -> HiFTGenerator:
    """HiFT for ``config``; ``flow`` (the same YAML's flow section) sizes the causal noise."""
    if flow is None:
        return HiFTGenerator(config)
    draws = ConstructionDraws(mel_channels=flow.output_size, vocab_size=flow.vocab_size,
                              flow_input_size=flow.input_size, spk_embed_dim=flow.spk_embed_dim,
                              f0_in_channels=config.in_channels,
                              f0_cond_channels=config.f0_cond_channels)
    return HiFTGenerator(config, draws)
