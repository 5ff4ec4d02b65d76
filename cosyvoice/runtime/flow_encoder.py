"""The flow model's token encoders: the pre-lookahead convolution (v2 and v3) and the v2
upsampling conformer (6 layers at the token rate, ×2 upsampling, 4 layers at the mel rate).

Parameter names and shapes follow the released ``flow.pt`` (``encoder.*`` and
``pre_lookahead_layer.*`` keys). Only the released v2 configuration is built: relative
position self-attention, pre-norm, no macaron feed-forward, no convolution module.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.runtime.flow_masks import attention_mask, length_mask


class PreLookaheadLayer(nn.Module):
    """A residual pair of convolutions that sees ``lookahead`` future tokens.

    ``forward(x (B, T, C), context (B, L, C) | None) -> (B, T, C)``. In streaming the
    last ``lookahead`` tokens are not yet final: they come as ``context`` and only feed the
    look-ahead of the tokens before them; when ``context`` is None the future is zeros.
    """

    def __init__(self, in_channels: int, channels: int, lookahead: int) -> None:
        super().__init__()
        self.lookahead = lookahead
        self.conv1 = nn.Conv1d(in_channels, channels, kernel_size=lookahead + 1)
        self.conv2 = nn.Conv1d(channels, in_channels, kernel_size=3)

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        h = x.transpose(1, 2)
        if context is None or context.size(1) == 0:
            h = F.pad(h, (0, self.lookahead))
        else:
            h = torch.cat([h, context.transpose(1, 2)], dim=2)
            h = F.pad(h, (0, self.lookahead - context.size(1)))
        h = F.leaky_relu(self.conv1(h))
        h = self.conv2(F.pad(h, (self.conv2.kernel_size[0] - 1, 0)))
        return h.transpose(1, 2) + x


def relative_position_table(length: int, dim: int, device: torch.device,
                            dtype: torch.dtype) -> torch.Tensor:
    """Sinusoids for relative positions ``length-1 … -(length-1)``: (1, 2·length-1, dim)."""
    position = torch.arange(0, length, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * -(math.log(10000.0) / dim))
    forward = torch.zeros(length, dim)
    backward = torch.zeros(length, dim)
    forward[:, 0::2] = torch.sin(position * div_term)
    forward[:, 1::2] = torch.cos(position * div_term)
    backward[:, 0::2] = torch.sin(-1 * position * div_term)
    backward[:, 1::2] = torch.cos(-1 * position * div_term)
    table = torch.cat([torch.flip(forward, [0]), backward[1:]], dim=0)
    return table.unsqueeze(0).to(device=device, dtype=dtype)


class LinearEmbed(nn.Module):
    """Linear → LayerNorm → ×√d, and the relative position table for the length."""

    def __init__(self, idim: int, odim: int) -> None:
        super().__init__()
        self.out = nn.Sequential(nn.Linear(idim, odim), nn.LayerNorm(odim, eps=1e-5))
        self.scale = math.sqrt(odim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.out(x) * self.scale
        return x, relative_position_table(x.size(1), x.size(2), x.device, x.dtype)


class RelPositionAttention(nn.Module):
    """Multi-head self-attention with Transformer-XL relative positions (biases u and v)."""

    def __init__(self, heads: int, dim: int) -> None:
        super().__init__()
        self.heads, self.d_k = heads, dim // heads
        self.linear_q = nn.Linear(dim, dim)
        self.linear_k = nn.Linear(dim, dim)
        self.linear_v = nn.Linear(dim, dim)
        self.linear_out = nn.Linear(dim, dim)
        self.linear_pos = nn.Linear(dim, dim, bias=False)
        self.pos_bias_u = nn.Parameter(torch.zeros(heads, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.zeros(heads, self.d_k))

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), -1, self.heads, self.d_k)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """x (B, T, D), mask (B, 1|T, T) bool, pos (1, 2T-1, D) -> (B, T, D)."""
        batch, length = x.size(0), x.size(1)
        q = self._split(self.linear_q(x))
        k = self._split(self.linear_k(x)).transpose(1, 2)
        v = self._split(self.linear_v(x)).transpose(1, 2)
        p = self._split(self.linear_pos(pos)).transpose(1, 2)
        content = torch.matmul((q + self.pos_bias_u).transpose(1, 2), k.transpose(-2, -1))
        position = torch.matmul((q + self.pos_bias_v).transpose(1, 2), p.transpose(-2, -1))
        # query i, key j reads relative position i - j, stored at column (T-1) - i + j
        rows = torch.arange(length, device=x.device)
        index = (length - 1) - rows[:, None] + rows[None, :]
        position = position[:, :, rows[:, None], index]
        scores = (content + position) / math.sqrt(self.d_k)
        blocked = mask.unsqueeze(1).eq(0)
        weights = torch.softmax(scores.masked_fill(blocked, -float("inf")), dim=-1)
        weights = weights.masked_fill(blocked, 0.0)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(batch, length, -1)
        return self.linear_out(out)


class FeedForward(nn.Module):
    """Position-wise feed-forward with SiLU (``w_1``, ``w_2``)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w_1 = nn.Linear(dim, hidden)
        self.w_2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(F.silu(self.w_1(x)))


class ConformerLayer(nn.Module):
    """Pre-norm self-attention + feed-forward, each with a residual."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.self_attn = RelPositionAttention(heads, dim)
        self.feed_forward = FeedForward(dim, hidden)
        self.norm_ff = nn.LayerNorm(dim, eps=1e-12)
        self.norm_mha = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.norm_mha(x), mask, pos)
        return x + self.feed_forward(self.norm_ff(x))


class RepeatUpsample(nn.Module):
    """Nearest ×stride repetition, then a causal convolution of width 2·stride+1."""

    def __init__(self, channels: int, stride: int = 2) -> None:
        super().__init__()
        self.stride = stride
        self.conv = nn.Conv1d(channels, channels, stride * 2 + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, C, T) -> (B, C, stride·T)."""
        x = x.repeat_interleave(self.stride, dim=2)
        return self.conv(F.pad(x, (self.stride * 2, 0)))


class UpsampleConformerEncoder(nn.Module):
    """Tokens (B, T, D) at 25 Hz -> hidden states (B, 2T, D) at the 50 Hz mel rate.

    ``chunk`` is the streaming attention chunk at the token rate (the YAML's
    ``static_chunk_size``); it doubles after upsampling. The width is fixed at the
    released 512 (the reference hard-codes it for the lookahead and upsampling layers).
    """

    def __init__(self, dim: int = 512, heads: int = 8, hidden: int = 2048, blocks: int = 6,
                 up_blocks: int = 4, lookahead: int = 3, chunk: int = 25) -> None:
        super().__init__()
        self.chunk = chunk
        self.embed = LinearEmbed(dim, dim)
        self.pre_lookahead_layer = PreLookaheadLayer(dim, dim, lookahead)
        self.encoders = nn.ModuleList(ConformerLayer(dim, heads, hidden) for _ in range(blocks))
        self.up_layer = RepeatUpsample(dim, 2)
        self.up_embed = LinearEmbed(dim, dim)
        self.up_encoders = nn.ModuleList(ConformerLayer(dim, heads, hidden)
                                         for _ in range(up_blocks))
        self.after_norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, xs: torch.Tensor, lengths: torch.Tensor, context: torch.Tensor | None = None,
                streaming: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """xs (B, T, D), lengths (B,), context (B, L, D) lookahead tokens or None.

        Returns hidden (B, 2T, D) and its validity mask (B, 1, 2T).
        """
        valid = length_mask(lengths, xs.size(1)).unsqueeze(1)
        xs, pos = self.embed(xs)
        if context is not None and context.size(1) > 0:
            context, _ = self.embed(context)
        mask = attention_mask(valid, self.chunk if streaming else 0)
        xs = self.pre_lookahead_layer(xs, context)
        for layer in self.encoders:
            xs = layer(xs, mask, pos)
        xs = self.up_layer(xs.transpose(1, 2)).transpose(1, 2)
        stride = self.up_layer.stride
        valid = length_mask(lengths * stride, xs.size(1)).unsqueeze(1)
        xs, pos = self.up_embed(xs)
        mask = attention_mask(valid, self.chunk * stride if streaming else 0)
        for layer in self.up_encoders:
            xs = layer(xs, mask, pos)
        return self.after_norm(xs), valid
