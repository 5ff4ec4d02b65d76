"""The harness's rows: every engine, voice and mode it scores, as data.

A preset row speaks test-set parts with one voice. A clone row speaks, for each cloning
case, the first sentences of one part from the case's prompt (its ``variant`` says how the
prompt becomes a voice: :data:`CLONE_VARIANTS`). To add a way of cloning (e.g. a fitted
voice), add a variant that prepares the voice once per case and returns the request's
fields, and a row that names it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ZH_KOKORO = ("zm_yunxi", "zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi", "zm_yunjian",
             "zm_yunxia", "zm_yunyang")  # every Mandarin Kokoro voice (zm_yunxi the default)
COSYVOICE_NOTE = ("tiny CosyVoice3 folder with random weights (tests/cosyvoice_folder.py): "
                  "its speech is noise, so WER/DNSMOS say nothing; timing and memory of the "
                  "runtime at tiny size only")


@dataclass(frozen=True)
class Row:
    """``parts``: test-set parts a preset row speaks (``limit``: at most that many texts of
    each). ``clone_part``/``per_case``: what a clone row speaks per case. ``engine``:
    ``offline`` or ``cosyvoice3`` (a tiny random folder made in the rendering process)."""

    name: str
    label: str
    mode: str = "preset"  # preset | clone | cross_lingual
    voice: str | None = None
    parts: tuple[str, ...] = ()
    limit: int | None = None
    clone_part: str = ""
    per_case: int = 3
    variant: str = "blend"
    engine: str = "offline"
    note: str = ""

    @property
    def clones(self) -> bool:
        return self.mode in ("clone", "cross_lingual")


def _preset(voice: str, parts: tuple[str, ...], label: str, note: str = "") -> Row:
    return Row(voice, label, voice=voice, parts=parts, note=note)


ROWS: tuple[Row, ...] = (
    _preset("af_heart", ("en", "long_en"), "Kokoro af_heart (English default)"),
    *(_preset(v, ("zh", "mixed", "long_zh") if v == "zm_yunxi" else ("zh", "mixed"),
              f"Kokoro {v}" + (" (Mandarin default)" if v == "zm_yunxi" else ""))
      for v in ZH_KOKORO),
    _preset("zm_yunxi:1+zm_yunjian:1", ("zh", "mixed"),
            "Kokoro blend: the default and zm_yunjian (DNSMOS 3.27, the best mixed score)"),
    _preset("joe", ("en",), "Piper joe"),
    _preset("baker", ("zh", "mixed"), "FastSpeech2 baker",
            "mixed: English runs by Piper moved toward baker"),
    Row("clone", "clone: blend of the nearest Kokoro voices", mode="clone", clone_part="en",
        note="similarity to held-out clips of each case's speaker"),
    Row("cross_lingual", "cross-lingual clone: en prompt → Mandarin", mode="cross_lingual",
        clone_part="zh", note="the blend of the nearest Mandarin voices; similarity to the "
        "speaker's held-out (non-Mandarin) clips"),
    Row("cosyvoice3", "CosyVoice3 runtime (tiny random folder)", engine="cosyvoice3",
        parts=("en",), limit=3, note=COSYVOICE_NOTE),
)
QUICK_ROWS = ("af_heart", "zm_yunxi", "clone")


def select(names: list[str] | None) -> list[Row]:
    """The rows named (all when None), in table order; ValueError naming the choices."""
    if not names:
        return list(ROWS)
    known = {r.name: r for r in ROWS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown rows {unknown}; choose from {', '.join(known)}")
    return [r for r in ROWS if r.name in names]


# variant → (Synthesizer, row, prompt path) → the request's fields for that case; called once
# per case in the rendering process (a variant that fits or saves a voice does it here)
CloneVariant = Callable[[object, Row, Path], dict]


def _blend(synth, row: Row, prompt: Path) -> dict:
    """Today's cloning: the engine places the prompt in Kokoro's voice space and speaks the
    blend of its nearest voices of the text's language."""
    return {"mode": row.mode, "prompt_path": str(prompt)}


CLONE_VARIANTS: dict[str, CloneVariant] = {"blend": _blend}
