"""Voice blends: ``af_bella:2+af_sky:1`` — a weighted mix of an engine's blendable voices.

A blend is data: which voices, with which weights (normalized to sum 1). The engine decides
what mixing means (Kokoro: the weighted mean of the voices' style packs). The written form
is ``name[:weight]`` joined by ``+``; a missing weight is 1. :attr:`Blend.spec` is the
canonical form (names in the order given, weights as short decimals), so the same blend
typed two ways caches and saves as one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cosyvoice.errors import TextError

MAX_PARTS = 5
WEIGHT_RANGE = (0.01, 100.0)
SPEC_MAX_CHARS = 200
_PART = re.compile(r"\s*([A-Za-z][\w.-]*)\s*(?::\s*([0-9]*\.?[0-9]+)\s*)?")


@dataclass(frozen=True)
class Blend:
    """Voices (in the order given) and their weights, normalized to sum 1."""

    parts: tuple[tuple[str, float], ...]

    @property
    def spec(self) -> str:
        return "+".join(f"{name}:{_short(w)}" for name, w in self.parts)

    @property
    def lead(self) -> str:
        """The heaviest voice (the first of equals): its language and gender lead."""
        return max(self.parts, key=lambda p: p[1])[0]

    def weights(self) -> dict[str, float]:
        return dict(self.parts)

    def to_dict(self) -> dict:
        return {"spec": self.spec, "weights": self.weights()}

    @classmethod
    def from_weights(cls, weights: Mapping[str, float]) -> Blend:
        """Voice name → weight (any positive finite numbers), normalized to sum to 1."""
        if not weights or not all(
                isinstance(n, str) and isinstance(w, int | float) and not isinstance(w, bool)
                and math.isfinite(w) and w > 0 for n, w in weights.items()):
            raise TextError("a blend needs voices with positive weights")
        total = float(sum(weights.values()))
        return cls(tuple((n, float(w) / total) for n, w in weights.items()))


def is_blend_spec(text: str | None) -> bool:
    """Whether ``text`` is written as a blend (has ``+`` or ``:``), valid or not."""
    return bool(text) and ("+" in text or ":" in text)


def parse_blend(spec: str, voices: Iterable[str], user: bool = True) -> Blend:
    """``"af_bella:2+af_sky:1"`` → :class:`Blend` over ``voices`` (the engine's blendable
    voices); raises :class:`TextError` saying what to fix. ``user=False`` (the engine
    reading a canonical :attr:`Blend.spec` back) takes any positive weight: a normalized
    share may lie below what a user may type (``af_bella:100+af_sky:0.5`` keeps af_sky at
    0.005)."""
    voices = tuple(voices)
    if not voices:
        raise TextError("this engine's voices cannot be blended / 此引擎不支持混合音色")
    example = f"e.g. {voices[0]}:2+{voices[min(1, len(voices) - 1)]}:1"
    if len(spec) > SPEC_MAX_CHARS:
        raise TextError(f"the voice blend is {len(spec)} characters; use at most "
                        f"{SPEC_MAX_CHARS}")
    pieces = spec.split("+")
    if len(pieces) > MAX_PARTS:
        raise TextError(f"a blend mixes at most {MAX_PARTS} voices (got {len(pieces)}) / "
                        f"最多混合 {MAX_PARTS} 个音色")
    known = {v.casefold(): v for v in voices}
    weights: dict[str, float] = {}
    for piece in pieces:
        m = _PART.fullmatch(piece)
        if m is None:
            raise TextError(f"cannot read {piece.strip()!r} in the voice blend; write "
                            f"voice:weight joined by '+', {example} / 混合音色格式：音色:权重")
        name = known.get(m.group(1).casefold())
        if name is None:
            raise TextError(f"{m.group(1)!r} in the blend is not a voice that can be blended; "
                            f"choose from: {', '.join(voices)}")
        weight = float(m.group(2)) if m.group(2) else 1.0
        lo, hi = WEIGHT_RANGE if user else (1e-12, float("inf"))
        if not lo <= weight <= hi:
            raise TextError(f"the weight of {name} is {weight:g}; use {lo:g}–{hi:g} "
                            f"({example})")
        if name in weights:
            raise TextError(f"{name} appears twice in the blend; give it one weight")
        weights[name] = weight
    return Blend.from_weights(weights)


def _short(w: float) -> str:
    """Three decimals, or three significant digits for a weight below 0.001."""
    return f"{w:.3f}".rstrip("0").rstrip(".") if w >= 0.001 else f"{w:.3g}"
