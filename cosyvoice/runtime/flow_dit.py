"""The Fun-CosyVoice3 flow estimator: a diffusion transformer (DiT) with adaptive
layer-norm modulation by the flow time, rotary positions and a causal convolutional
position embedding. Parameter names follow the released ``flow.pt``
(``decoder.estimator.*`` keys, ``CausalMaskedDiffWithDiT``).

``forward(x, mask, mu, t, spks, cond, streaming) -> velocity`` with x, mu, cond
(B, 80, T), mask (B, 1, T), t (B,), spks (B, 80).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.runtime.flow_masks import full_attention_mask
from cosyvoice.runtime.flow_unet import sinusoidal_time


class TimeEmbedding(nn.Module):
    """Sinusoidal features (256) -> Linear → SiLU → Linear (``time_mlp.0``, ``time_mlp.2``)."""

    def __init__(self, dim: int, freq_dim: int = 256) -> None:
        super().__init__()
        self.freq_dim = freq_dim
        self.time_mlp = nn.Sequential(nn.Linear(freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return self.time_mlp(sinusoidal_time(t, self.freq_dim).to(t.dtype))


class CausalConvPosition(nn.Module):
    """Two grouped causal convolutions (kernel 31) with Mish, added to their input."""

    def __init__(self, dim: int, kernel_size: int = 31, groups: int = 16) -> None:
        super().__init__()
        self.left = kernel_size - 1
        self.conv1 = nn.Sequential(nn.Conv1d(dim, dim, kernel_size, groups=groups), nn.Mish())
        self.conv2 = nn.Sequential(nn.Conv1d(dim, dim, kernel_size, groups=groups), nn.Mish())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, D) -> (B, T, D)."""
        h = self.conv1(F.pad(x.permute(0, 2, 1), (self.left, 0)))
        h = self.conv2(F.pad(h, (self.left, 0)))
        return h.permute(0, 2, 1)


class InputEmbedding(nn.Module):
    """Project [x | cond | mu | speaker] to the model width, plus the convolutional position."""

    def __init__(self, mel_dim: int, mu_dim: int, dim: int, spk_dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(mel_dim * 2 + mu_dim + spk_dim, dim)
        self.conv_pos_embed = CausalConvPosition(dim)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, mu: torch.Tensor,
                spks: torch.Tensor) -> torch.Tensor:
        spks = spks.unsqueeze(1).expand(-1, x.size(1), -1)
        x = self.proj(torch.cat([x, cond, mu, spks], dim=-1))
        return self.conv_pos_embed(x) + x


class RotaryEmbedding(nn.Module):
    """Rotary frequencies for ``dim`` channels; ``inv_freq`` is a saved buffer in ``flow.pt``."""

    def __init__(self, dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)))

    def forward(self, length: int) -> torch.Tensor:
        """-> (1, length, dim) angles, each frequency repeated for its channel pair."""
        pos = torch.arange(length, device=self.inv_freq.device).type_as(self.inv_freq)
        angles = torch.einsum("i,j->ij", pos, self.inv_freq)
        return torch.stack((angles, angles), dim=-1).reshape(1, length, -1)


def rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate channel pairs (2k, 2k+1) of the first ``angles.size(-1)`` channels of x (B, T, C).

    As released, this applies to the projection before it is split into heads, so only the
    first head's channels turn.
    """
    width = angles.size(-1)
    head, rest = x[..., :width], x[..., width:]
    pairs = head.reshape(*head.shape[:-1], width // 2, 2)
    turned = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).reshape(head.shape)
    head = (head * angles.cos() * 1.0) + (turned * angles.sin() * 1.0)
    return torch.cat((head, rest), dim=-1)


class ModulatedNorm(nn.Module):
    """LayerNorm without affine, scaled and shifted by a projection of the time embedding."""

    def __init__(self, dim: int, chunks: int) -> None:
        super().__init__()
        self.chunks = chunks
        self.linear = nn.Linear(dim, dim * chunks)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)

    def modulation(self, time: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.chunk(self.linear(F.silu(time)), self.chunks, dim=1)


class DiTAttention(nn.Module):
    """Self-attention with rotary positions on q and k and a boolean mask."""

    def __init__(self, dim: int, heads: int, head_dim: int) -> None:
        super().__init__()
        inner = heads * head_dim
        self.heads = heads
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(dim, inner)
        self.to_v = nn.Linear(dim, inner)
        self.to_out = nn.ModuleList([nn.Linear(inner, dim), nn.Dropout(0.0)])

    def forward(self, x: torch.Tensor, mask: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
        """x (B, T, D), mask (B, 1, T, T) bool, angles (1, T, head_dim) -> (B, T, D)."""
        batch = x.size(0)
        q = rotate(self.to_q(x), angles)
        k = rotate(self.to_k(x), angles)
        v = self.to_v(x)

        def heads(h: torch.Tensor) -> torch.Tensor:
            return h.view(batch, -1, self.heads, h.size(-1) // self.heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask)
        out = self.to_out[0](out.transpose(1, 2).reshape(batch, -1, q.size(-1)))
        # a frame the last query cannot see is padding: zero it
        return out.masked_fill(~mask[:, 0, -1].unsqueeze(-1), 0.0)


class FeedForward(nn.Module):
    """Linear → tanh-GELU → Linear (``ff.0.0``, ``ff.2``)."""

    def __init__(self, dim: int, mult: int) -> None:
        super().__init__()
        inner = dim * mult
        self.ff = nn.Sequential(nn.Sequential(nn.Linear(dim, inner), nn.GELU(approximate="tanh")),
                                nn.Dropout(0.0), nn.Linear(inner, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ff(x)


class DiTBlock(nn.Module):
    """Modulated attention and feed-forward, each gated by the time embedding."""

    def __init__(self, dim: int, heads: int, head_dim: int, ff_mult: int) -> None:
        super().__init__()
        self.attn_norm = ModulatedNorm(dim, 6)
        self.attn = DiTAttention(dim, heads, head_dim)
        self.ff_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff = FeedForward(dim, ff_mult)

    def forward(self, x: torch.Tensor, time: torch.Tensor, mask: torch.Tensor,
                angles: torch.Tensor) -> torch.Tensor:
        modulation = self.attn_norm.modulation(time)
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = modulation
        norm = self.attn_norm.norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None]
        x = x + gate_msa.unsqueeze(1) * self.attn(norm, mask, angles)
        norm = self.ff_norm(x) * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
        return x + gate_mlp.unsqueeze(1) * self.ff(norm)


class DiTEstimator(nn.Module):
    """The DiT velocity estimator (``DiT`` in the released YAML)."""

    def __init__(self, dim: int = 1024, depth: int = 22, heads: int = 16, dim_head: int = 64,
                 ff_mult: int = 2, mel_dim: int = 80, mu_dim: int = 80, spk_dim: int = 80,
                 chunk: int = 50) -> None:
        super().__init__()
        self.chunk = chunk
        self.time_embed = TimeEmbedding(dim)
        self.input_embed = InputEmbedding(mel_dim, mu_dim, dim, spk_dim)
        self.rotary_embed = RotaryEmbedding(dim_head)
        self.transformer_blocks = nn.ModuleList(DiTBlock(dim, heads, dim_head, ff_mult)
                                                for _ in range(depth))
        self.norm_out = ModulatedNorm(dim, 2)
        self.proj_out = nn.Linear(dim, mel_dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mu: torch.Tensor, t: torch.Tensor,
                spks: torch.Tensor, cond: torch.Tensor, streaming: bool = False) -> torch.Tensor:
        x, mu, cond = x.transpose(1, 2), mu.transpose(1, 2), cond.transpose(1, 2)
        if t.ndim == 0:
            t = t.repeat(x.size(0))
        time = self.time_embed(t)
        x = self.input_embed(x, cond, mu, spks)
        angles = self.rotary_embed(x.size(1))
        attn = full_attention_mask(mask.bool(), self.chunk if streaming else 0).unsqueeze(1)
        for block in self.transformer_blocks:
            x = block(x, time, attn, angles)
        scale, shift = self.norm_out.modulation(time)
        x = self.norm_out.norm(x) * (1 + scale)[:, None, :] + shift[:, None, :]
        return self.proj_out(x).transpose(1, 2)
