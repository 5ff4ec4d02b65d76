"""Building blocks of the HiFT vocoder: causal convolutions (with a look-ahead or history
``context`` in place of zero padding), the Snake-activated residual block, and the F0
predictor. Parameter names follow the released ``hift.pt``; weight-normalized layers use
``torch.nn.utils.parametrizations.weight_norm`` (whose loader also accepts the older
``weight_g``/``weight_v`` names).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm


class CausalConv1d(nn.Conv1d):
    """Stride-1 convolution that keeps the length, padded on one side only.

    ``side="left"`` sees only the past; ``side="right"`` sees ``pad`` future frames. In
    streaming, ``context`` (B, C, pad) holds the real frames that replace the zeros.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1,
                 side: str = "left") -> None:
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation)
        if side not in ("left", "right"):
            raise ValueError(f"causal padding side must be 'left' or 'right', got {side!r}")
        self.pad, self.side = (kernel_size - 1) * dilation, side

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        if context is None or context.size(2) == 0:
            context = torch.zeros(x.size(0), x.size(1), self.pad, device=x.device, dtype=x.dtype)
        x = torch.cat([context, x] if self.side == "left" else [x, context], dim=2)
        return super().forward(x)


class CausalDownsample(nn.Conv1d):
    """Strided convolution (kernel 2·stride) padded with ``stride - 1`` zeros on the left."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride)
        self.pad = stride - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.pad, 0)))


class CausalUpsample(nn.Conv1d):
    """Nearest ×stride repetition, then a causal stride-1 convolution."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int) -> None:
        super().__init__(in_channels, out_channels, kernel_size)
        self.factor, self.pad = stride, kernel_size - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.interpolate(x, scale_factor=float(self.factor), mode="nearest")
        return super().forward(F.pad(x, (self.pad, 0)))


class Snake(nn.Module):
    """``x + sin²(αx)/α`` with a learned α per channel (x is (B, C, T))."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        alpha = self.alpha.unsqueeze(0).unsqueeze(-1)
        return x + (1.0 / (alpha + 1e-9)) * torch.pow(torch.sin(x * alpha), 2)


def _conv(channels: int, kernel: int, dilation: int, causal: bool) -> nn.Conv1d:
    if causal:
        return weight_norm(CausalConv1d(channels, channels, kernel, dilation=dilation))
    return weight_norm(nn.Conv1d(channels, channels, kernel, dilation=dilation,
                                 padding=(kernel * dilation - dilation) // 2))


class ResBlock(nn.Module):
    """Per dilation: Snake → dilated conv → Snake → conv, added to the input."""

    def __init__(self, channels: int, kernel: int, dilations: list[int], causal: bool) -> None:
        super().__init__()
        self.convs1 = nn.ModuleList(_conv(channels, kernel, d, causal) for d in dilations)
        self.convs2 = nn.ModuleList(_conv(channels, kernel, 1, causal) for _ in dilations)
        self.activations1 = nn.ModuleList(Snake(channels) for _ in dilations)
        self.activations2 = nn.ModuleList(Snake(channels) for _ in dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv1, conv2, act1, act2 in zip(self.convs1, self.convs2, self.activations1,
                                            self.activations2):
            x = conv2(act2(conv1(act1(x)))) + x
        return x


class F0Predictor(nn.Module):
    """Mel (B, 80, T) -> F0 in Hz (B, T): five convolutions with ELU, then a linear head.

    The causal variant (v3) looks ``lookahead`` frames ahead in its first convolution and
    only backwards after; with ``finalize=False`` the last ``lookahead`` frames are
    context and produce no output.
    """

    def __init__(self, in_channels: int = 80, cond_channels: int = 512, num_class: int = 1,
                 causal: bool = False) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(5):
            cin = in_channels if i == 0 else cond_channels
            if not causal:
                conv = nn.Conv1d(cin, cond_channels, kernel_size=3, padding=1)
            elif i == 0:
                conv = CausalConv1d(cin, cond_channels, 4, side="right")
            else:
                conv = CausalConv1d(cin, cond_channels, 3, side="left")
            layers += [weight_norm(conv), nn.ELU()]
        self.condnet = nn.Sequential(*layers)
        self.classifier = nn.Linear(cond_channels, num_class)
        self.causal = causal
        self.lookahead = self.condnet[0].pad if causal else 0

    def forward(self, x: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        if self.causal and not finalize:
            x = self.condnet[0](x[:, :, :-self.lookahead], x[:, :, -self.lookahead:])
        else:
            x = self.condnet[0](x)
        for layer in self.condnet[1:]:
            x = layer(x)
        return torch.abs(self.classifier(x.transpose(1, 2)).squeeze(-1))
