"""Layout and fixed-shape tiles shared by the CPU fast path's convs.

Activations are ``(B, C, 1, T)`` channels-last tensors (memory order ``(B, T, C)``), so
one item is also a time-major ``(T, C)`` matrix: :func:`time_major` and
:func:`channels_last` switch views without copying.

oneDNN builds a kernel for every new conv shape and caches up to 1024 of them; with
AVX-512/AMX a kernel of this vocoder held ~3 MB, so convs at the request's own length
grew the process by ~170 MB per new length (1.1 → 4.4 GB over 20 lengths,
``bench/vocoder_memory.py``) and spent 2–400 ms building. So every oneDNN conv runs on
overlapping views of its padded input in tiles of two lengths (:func:`tile_plan`,
:func:`tile_sizes`), all built at load (:meth:`CpuGenerator.warm_up`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

CL = torch.channels_last


def time_major(x: torch.Tensor) -> torch.Tensor:
    """``(1, C, 1, T)`` channels-last → ``(T, C)`` view (no copy)."""
    return x.permute(0, 2, 3, 1).flatten(0, 2)


def channels_last(y: torch.Tensor) -> torch.Tensor:
    """``(T, C)`` with unit channel stride → ``(1, C, 1, T)`` channels-last view."""
    return y.t().unsqueeze(0).unsqueeze(2)


def padded_input(x: torch.Tensor, left: int, length: int,
                 pre_slope: float | None) -> torch.Tensor:
    """``(1, C, 1, T)`` → ``(length, C)``: ``left`` zeros, ``lrelu(x)`` (or x), zeros."""
    t, c = x.shape[-1], x.shape[1]
    buf = x.new_empty(length, c)
    buf[:left].zero_()
    buf[left + t:].zero_()
    body = buf[left:left + t]
    if pre_slope is None:
        body.copy_(time_major(x))
    else:
        torch._C._nn.leaky_relu(time_major(x), pre_slope, out=body)
    return buf


def tile_plan(t: int, tile: int, small: int) -> list[tuple[int, int]]:
    """``(start, length)`` output tiles covering ``t`` samples: ``tile``-long ones, then
    ``small``-long ones for the rest (the last may reach past ``t``)."""
    big, rest = divmod(t, tile)
    out = [(i * tile, tile) for i in range(big)]
    out += [(big * tile + j * small, small) for j in range(-(-rest // small))]
    return out


def tile_sizes(rate: int) -> tuple[int, int]:
    """``(tile, small)`` for a conv running at ``rate`` samples per mel frame: 64 and 8
    frames' worth, so the waste past the end stays under 8 frames and a long request runs
    few tiles; at low rates at least 1024 and 128 samples (128 and 16 frames at most, and
    at least 32), where a tile's fixed cost would dominate. Chosen by the side-by-side
    sweep of ``bench/vocoder_memory.py --sweep`` (2026-12-04, RTF fp32/int8 on 2 Xeon
    cores: 0.149/0.099 against 0.158/0.105 for 32 and 4 frames, 0.170/0.111 for 16 and 2)."""
    return (max(64 * rate, min(128 * rate, 1024)),
            max(8 * rate, min(16 * rate, 128), 32))


def write_tiles_(out: torch.Tensor, tiles: list[tuple[int, int]],
                 conv: Callable[[int, int], torch.Tensor]) -> torch.Tensor:
    """``out[start:start + length] = conv(start, length)`` for each tile: ``out`` is
    time-major ``(covered, O)``, ``conv`` returns the tile as ``(1, O, 1, length)``
    channels-last. Returns ``out``."""
    for start, length in tiles:
        out[start:start + length].copy_(time_major(conv(start, length)))
    return out


def add_tiles_(acc: torch.Tensor, tiles: list[tuple[int, int]],
               add: Callable[[int, int, torch.Tensor], object]) -> torch.Tensor:
    """``add(start, length, dest)`` for each tile of the channels-last accumulator
    ``acc`` ``(1, C, 1, T)``, ``dest`` the tile's ``(1, C, 1, length)`` view, which
    oneDNN adds into. The last tile, which may reach past the end, adds into a
    zero-padded copy (the same kernel, so warm-up builds every one this uses), copied
    back after. Returns ``acc``."""
    tm = time_major(acc)
    t = tm.shape[0]
    for start, length in tiles:
        inside = start + length <= t
        dest = tm[start:start + length] if inside else padded_input(
            channels_last(tm[start:]), 0, length, None)
        add(start, length, channels_last(dest))
        if not inside:
            tm[start:].copy_(dest[: t - start])
    return acc


def runs_both_tiles(tiled: list[tuple[Tiled, int]]) -> bool:
    """Whether each conv of ``(conv, outputs)`` runs both its tile lengths on those outputs
    (what a warm-up must reach: oneDNN builds one kernel per tile shape)."""
    return all({n for _, n in c.tiles(t)} == set(c.tile) for c, t in tiled)


class Tiled:
    """What a conv with ``tiles(t)`` and ``span`` knows of its tiles' extent."""

    span: int

    def tiles(self, t: int) -> list[tuple[int, int]]:
        raise NotImplementedError

    def covered(self, t: int) -> int:
        """Outputs the tiles of ``t`` outputs compute (``t`` up to one small tile more)."""
        start, length = self.tiles(t)[-1]
        return start + length

    def padded_rows(self, t: int) -> int:
        """Rows of zero-padded input the tiles of ``t`` outputs read."""
        return self.covered(t) + self.span - 1
