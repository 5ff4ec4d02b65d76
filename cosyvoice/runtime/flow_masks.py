"""Masks shared by the flow model's encoder and estimators: padding, and the static-chunk
attention that makes the flow model streamable (a frame sees its own chunk and all chunks
to its left)."""

from __future__ import annotations

import torch

# the additive bias for a blocked attention position (the reference's value, not -inf)
BLOCKED_BIAS = -1.0e10


def length_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """(B,) lengths -> (B, max_len) bool, True on the valid frames."""
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]


def chunk_mask(size: int, chunk: int, device: torch.device) -> torch.Tensor:
    """(size, size) bool: frame i attends to frames before the end of i's chunk."""
    pos = torch.arange(size, device=device)
    return pos[None, :] < ((torch.div(pos, chunk, rounding_mode="trunc") + 1) * chunk)[:, None]


def attention_mask(valid: torch.Tensor, chunk: int) -> torch.Tensor:
    """valid (B, 1, T) -> (B, T, T) chunked mask when ``chunk > 0``, else ``valid`` itself.

    A query row that would see nothing is opened fully (its output is masked later), so
    softmax never meets an all-blocked row.
    """
    if chunk > 0:
        mask = valid & chunk_mask(valid.size(2), chunk, valid.device).unsqueeze(0)
    else:
        mask = valid
    empty = mask.sum(dim=-1) == 0
    if bool(empty.any()):
        mask = mask.clone()
        mask[empty] = True
    return mask


def full_attention_mask(valid: torch.Tensor, chunk: int) -> torch.Tensor:
    """valid (B, 1, T) -> (B, T, T) bool, chunked when ``chunk > 0`` (streaming)."""
    mask = attention_mask(valid, chunk)
    return mask if chunk > 0 else mask.repeat(1, valid.size(2), 1)


def mask_bias(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool mask -> additive attention bias (0 where allowed, -1e10 where blocked)."""
    return (1.0 - mask.to(dtype)) * BLOCKED_BIAS
