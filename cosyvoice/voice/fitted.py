"""A fitted voice's parts: its Kokoro style pack, checked wherever one is read (a saved
voice's ``pack.npy``, an imported voice file), and the summary of its provenance.

A fitted voice (:mod:`cosyvoice.voice.fit`) is a ``(510, 256)`` float32 pack near the stock
packs, found by searching Kokoro's style space for the prompt's speaker; its provenance says
how (prompt sha256, generations, scores before and after, F0, encoder hashes, budget, date).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cosyvoice.state_files import DamagedFile

PACK_MAX_ABS = 32.0  # the stock packs stay within ±3.2; a fit stays near them


def pack_shape() -> tuple[int, int]:
    """The style pack's shape Kokoro's manifest promises: ``(510, 256)``."""
    from cosyvoice.assets import kokoro_manifest

    shape = kokoro_manifest()["voices"]["shape"]
    return int(shape[0]), int(shape[-1])


def check_pack(pack: Any) -> np.ndarray:
    """A style pack as the app keeps it; DamagedFile naming what is wrong (a shape other
    than :func:`pack_shape`, not float32, a NaN or infinity, values far off the stock
    packs')."""
    if not isinstance(pack, np.ndarray):
        raise DamagedFile("the style pack is not an array")
    if pack.shape != pack_shape():
        raise DamagedFile(f"the style pack is {pack.shape}; expected {pack_shape()}")
    if pack.dtype != np.float32:
        raise DamagedFile(f"the style pack is {pack.dtype}; expected float32")
    if not np.isfinite(pack).all():
        raise DamagedFile("the style pack holds NaN or infinite values")
    if float(np.max(np.abs(pack))) > PACK_MAX_ABS:
        raise DamagedFile(f"the style pack has values beyond ±{PACK_MAX_ABS:g} (stock packs "
                          "stay within ±3.2)")
    return np.ascontiguousarray(pack)


def load_pack(path: Path) -> np.ndarray:
    """``pack.npy``: a plain array (no pickled objects), checked by :func:`check_pack`."""
    return check_pack(np.load(path, allow_pickle=False))


# What a listing shows of a fitted voice's provenance (profile.json keeps all of it).
FIT_SUMMARY_KEYS = ("method", "lang", "prompt_sha256", "prompt_s", "prompt_f0_hz",
                    "start_blend", "generations", "evaluations", "seconds", "cpu_s",
                    "budget_s", "stopped", "encoders", "date")


def fit_summary(fit: dict[str, Any]) -> dict[str, Any]:
    """The provenance of a fitted voice as listed: how it was made and its scores (GE2E
    similarity to the prompt and F0 re the prompt's, semitones) before (the blend) and
    after the fit."""
    out = {k: fit[k] for k in FIT_SUMMARY_KEYS if k in fit}
    scores = fit.get("scores") if isinstance(fit.get("scores"), dict) else {}
    out["scores"] = {when: {k: s.get(k) for k in ("sim", "check", "f0_st")}
                     for when, s in (("before", scores.get("start")),
                                     ("after", scores.get("final")))
                     if isinstance(s, dict)}
    return out
