"""The CosyVoice2 flow estimator: a 1-D causal U-Net of ResNet blocks and transformer blocks,
conditioned on the flow time, the encoder output ``mu``, the speaker vector and the prompt
mel. Parameter names follow the released ``flow.pt`` (``decoder.estimator.*`` keys).

``forward(x, mask, mu, t, spks, cond, streaming) -> velocity`` with x, mu, cond
(B, 80, T), mask (B, 1, T), t (B,), spks (B, 80).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.runtime.flow_masks import full_attention_mask, mask_bias


def sinusoidal_time(t: torch.Tensor, dim: int, scale: float = 1000.0) -> torch.Tensor:
    """(B,) flow times -> (B, dim) [sin | cos] features of ``scale · t``."""
    if t.ndim < 1:
        t = t.unsqueeze(0)
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freqs = torch.exp(torch.arange(half, device=t.device).float() * -step)
    angles = scale * t.unsqueeze(1) * freqs.unsqueeze(0)
    return torch.cat((angles.sin(), angles.cos()), dim=-1)


class TimeMLP(nn.Module):
    """Linear → SiLU → Linear on the sinusoidal time features (``linear_1``, ``linear_2``)."""

    def __init__(self, in_dim: int, dim: int) -> None:
        super().__init__()
        self.linear_1 = nn.Linear(in_dim, dim)
        self.linear_2 = nn.Linear(dim, dim)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return self.linear_2(F.silu(self.linear_1(t)))


class CausalConv1d(nn.Conv1d):
    """A stride-1 convolution padded with ``kernel_size - 1`` zeros on the left."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int) -> None:
        super().__init__(in_channels, out_channels, kernel_size)
        self.left = kernel_size - 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.left, 0)))


class _ChannelLayerNorm(nn.LayerNorm):
    """LayerNorm over channels of a (B, C, T) tensor."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class CausalBlock(nn.Module):
    """Masked causal conv(3) → LayerNorm → Mish (``block.0`` conv, ``block.2`` norm)."""

    def __init__(self, dim: int, dim_out: int) -> None:
        super().__init__()
        self.block = nn.Sequential(CausalConv1d(dim, dim_out, 3), nn.Identity(),
                                   _ChannelLayerNorm(dim_out), nn.Identity(), nn.Mish())

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.block(x * mask) * mask


class CausalResnetBlock(nn.Module):
    """Two causal blocks with the time embedding added between, plus a 1×1 residual."""

    def __init__(self, dim: int, dim_out: int, time_dim: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Mish(), nn.Linear(time_dim, dim_out))
        self.block1 = CausalBlock(dim, dim_out)
        self.block2 = CausalBlock(dim_out, dim_out)
        self.res_conv = nn.Conv1d(dim, dim_out, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        h = self.block1(x, mask)
        h = h + self.mlp(time).unsqueeze(-1)
        h = self.block2(h, mask)
        return h + self.res_conv(x * mask)


class SelfAttention(nn.Module):
    """Bias-free q/k/v projections, scaled dot-product attention with an additive bias."""

    def __init__(self, dim: int, heads: int, head_dim: int) -> None:
        super().__init__()
        inner = heads * head_dim
        self.heads = heads
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_k = nn.Linear(dim, inner, bias=False)
        self.to_v = nn.Linear(dim, inner, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(0.0)])

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """x (B, T, D), bias (B, T, T) -> (B, T, D)."""
        batch = x.size(0)

        def heads(h: torch.Tensor) -> torch.Tensor:
            return h.view(batch, -1, self.heads, h.size(-1) // self.heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(self.to_q(x)), heads(self.to_k(x)),
                                             heads(self.to_v(x)), attn_mask=bias.unsqueeze(1))
        out = out.transpose(1, 2).reshape(batch, -1, out.size(1) * out.size(3))
        return self.to_out[0](out)


class GeluProjection(nn.Module):
    """Linear followed by exact GELU (``proj``)."""

    def __init__(self, dim: int, inner: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, inner)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.proj(x))


class TransformerBlock(nn.Module):
    """Pre-norm self-attention and GELU feed-forward (×4), each with a residual."""

    def __init__(self, dim: int, heads: int, head_dim: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn1 = SelfAttention(dim, heads, head_dim)
        self.norm3 = nn.LayerNorm(dim)
        self.ff = nn.Module()
        self.ff.net = nn.ModuleList([GeluProjection(dim, dim * 4), nn.Dropout(0.0),
                                     nn.Linear(dim * 4, dim)])

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = self.attn1(self.norm1(x), bias) + x
        h = self.norm3(x)
        for layer in self.ff.net:
            h = layer(h)
        return h + x


class UNetEstimator(nn.Module):
    """The causal conditional U-Net (``CausalConditionalDecoder`` in the released YAML)."""

    def __init__(self, in_channels: int = 320, out_channels: int = 80,
                 channels: tuple[int, ...] = (256,), n_blocks: int = 4, num_mid_blocks: int = 12,
                 num_heads: int = 8, attention_head_dim: int = 64, chunk: int = 50) -> None:
        super().__init__()
        channels = tuple(channels)
        self.in_channels, self.chunk = in_channels, chunk
        time_dim = channels[0] * 4
        self.time_mlp = TimeMLP(in_channels, time_dim)

        def stage(dim: int) -> nn.ModuleList:
            return nn.ModuleList(TransformerBlock(dim, num_heads, attention_head_dim)
                                 for _ in range(n_blocks))

        self.down_blocks = nn.ModuleList()
        out_ch = in_channels
        for i, ch in enumerate(channels):
            in_ch, out_ch = out_ch, ch
            last = i == len(channels) - 1
            down = CausalConv1d(ch, ch, 3) if last else nn.Conv1d(ch, ch, 3, 2, 1)
            self.down_blocks.append(nn.ModuleList([CausalResnetBlock(in_ch, ch, time_dim),
                                                   stage(ch), down]))
        self.mid_blocks = nn.ModuleList(
            nn.ModuleList([CausalResnetBlock(channels[-1], channels[-1], time_dim),
                           stage(channels[-1])])
            for _ in range(num_mid_blocks))
        ups = channels[::-1] + (channels[0],)
        self.up_blocks = nn.ModuleList()
        for i in range(len(ups) - 1):
            ch = ups[i + 1]
            last = i == len(ups) - 2
            up = CausalConv1d(ch, ch, 3) if last else nn.ConvTranspose1d(ch, ch, 4, 2, 1)
            self.up_blocks.append(nn.ModuleList([CausalResnetBlock(ups[i] * 2, ch, time_dim),
                                                 stage(ch), up]))
        self.final_block = CausalBlock(ups[-1], ups[-1])
        self.final_proj = nn.Conv1d(ups[-1], out_channels, 1)

    def _attend(self, x: torch.Tensor, mask: torch.Tensor, blocks: nn.ModuleList,
                streaming: bool) -> torch.Tensor:
        h = x.transpose(1, 2).contiguous()
        bias = mask_bias(full_attention_mask(mask.bool(), self.chunk if streaming else 0), h.dtype)
        for block in blocks:
            h = block(h, bias)
        return h.transpose(1, 2).contiguous()

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mu: torch.Tensor, t: torch.Tensor,
                spks: torch.Tensor, cond: torch.Tensor, streaming: bool = False) -> torch.Tensor:
        time = self.time_mlp(sinusoidal_time(t, self.in_channels).to(t.dtype))
        spks = spks.unsqueeze(-1).expand(-1, -1, x.size(-1))
        x = torch.cat([x, mu, spks, cond], dim=1)
        skips, masks = [], [mask]
        for resnet, blocks, down in self.down_blocks:
            x = self._attend(resnet(x, masks[-1], time), masks[-1], blocks, streaming)
            skips.append(x)
            x = down(x * masks[-1])
            masks.append(masks[-1][:, :, ::2])
        masks.pop()
        for resnet, blocks in self.mid_blocks:
            x = self._attend(resnet(x, masks[-1], time), masks[-1], blocks, streaming)
        for resnet, blocks, up in self.up_blocks:
            mask_up, skip = masks.pop(), skips.pop()
            x = torch.cat([x[:, :, :skip.size(-1)], skip], dim=1)
            x = self._attend(resnet(x, mask_up, time), mask_up, blocks, streaming)
            x = up(x * mask_up)
        x = self.final_block(x, mask_up)
        return self.final_proj(x * mask_up) * mask
