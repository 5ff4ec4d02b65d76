"""What dialogues and batch jobs share: an :class:`Item` (one request's worth of speech),
the check of every item before any synthesis (errors name the line or row), and the
timeline that places the rendered items with gaps into one file (and its subtitle cues).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from cosyvoice.errors import CosyVoiceError, TextError
from cosyvoice.frontend.plan import spoken_text
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from cosyvoice.subtitles import Cue

GAP_RANGE_S = (0.0, 5.0)
FILENAME = re.compile(r"^[\w][\w.-]{0,99}$")  # an item's output file: a plain name, no folder


@dataclass
class Item:
    """One stretch of speech: ``text`` in ``voice`` (None: the engine's default for the
    text) with an optional ``instruction``. ``where`` names it in messages ("line 3",
    "row 5", "chapter 2, part 1"); a change of ``group`` (speaker, chapter) gets the longer
    gap."""

    text: str
    voice: str | None
    instruction: str = ""
    where: str = ""
    group: str = ""
    filename: str = ""

    def request(self, engine: str | None = None, speed: float = 1.0,
                seed: int | None = None) -> SynthesisRequest:
        mode = "instruct" if self.instruction else "preset"
        return SynthesisRequest(text=self.text, mode=mode, voice=self.voice or None,
                                instruction=self.instruction, speed=speed, seed=seed,
                                engine=engine)

    def to_dict(self) -> dict:
        return asdict(self)


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_source_text(content: str, unit: str = "line") -> None:
    """Refuse a dialogue script or batch source holding a character no text can (a lone
    UTF-16 surrogate): a TextError naming its ``unit`` ("line", "row") by number, before
    anything is parsed or stored."""
    m = _SURROGATE.search(content)
    if m is not None:
        refuse_surrogates(m.group(), f"{unit} {len(content[:m.start() + 1].splitlines())}")


def refuse_surrogates(text: str, where: str) -> None:
    """TextError naming ``where`` when ``text`` holds a lone surrogate (what a JSON
    ``"\\ud800"`` escape decodes to): no file, subtitle or response could carry it."""
    m = _SURROGATE.search(text)
    if m is not None:
        raise TextError(f"{where}: holds U+{ord(m.group()):04X}, half of a UTF-16 pair, "
                        "which is not text; save the file as UTF-8 / 含无效字符，请保存为 UTF-8")


def check_items(synth: Synthesizer, items: Sequence[Item], engine: str | None = None,
                speed: float = 1.0, seed: int | None = None) -> None:
    """Run every check a synthesis makes (engine, voice, instruction, the text pass) on
    each item, before any is synthesized; the first failure is a TextError (422) naming
    the item, e.g. ``line 3: unknown voice 'Bob'; available: ...``."""
    for item in items:
        try:
            synth.validate(item.request(engine, speed, seed))
        except CosyVoiceError as e:
            if e.http_status >= 500:  # the engine itself, not this line
                raise
            raise TextError(f"{item.where}: {e}") from None


def check_gap(name: str, value: float) -> float:
    lo, hi = GAP_RANGE_S
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not lo <= v <= hi:
        raise TextError(f"{name} must be between {lo:g} and {hi:g} s (got {value!r}) / "
                        f"间隔须在 {lo:g} 到 {hi:g} 秒之间")
    return v


def gaps_between(items: Sequence[Item], gap_s: float, group_gap_s: float) -> list[float]:
    """The silence after each item but the last: ``group_gap_s`` where the next item's
    group differs (a new speaker or chapter), else ``gap_s``."""
    return [group_gap_s if a.group != b.group else gap_s for a, b in zip(items, items[1:])]


def gap_samples(gaps_s: Sequence[float], sr: int) -> list[int]:
    return [int(round(g * sr)) for g in gaps_s]


def cues_for(texts: Sequence[str], lengths: Sequence[int], gaps: Sequence[int],
             sr: int, labels: Sequence[str] | None = None) -> list[Cue]:
    """One cue per item: item ``i`` starts after the items and gaps before it (sample
    counts, so the cues match the joined file exactly). A cue shows the item's text as
    spoken (:func:`~cosyvoice.frontend.plan.spoken_text`: the cleaning a single request's
    subtitles get) on one line, after its label (``"af_heart: "``) if given."""
    cues, at = [], 0
    for i, (text, n) in enumerate(zip(texts, lengths, strict=True)):
        text = spoken_text(text).replace("\n", " ")
        if labels is not None:
            text = f"{labels[i]}: {text}"
        cues.append(Cue(at / sr, (at + n) / sr, text))
        at += n + (gaps[i] if i < len(gaps) else 0)
    return cues


def join_with_gaps(pieces: Sequence[np.ndarray], gaps: Sequence[int]) -> np.ndarray:
    """``pieces[0] + zeros(gaps[0]) + pieces[1] + ...`` (float32 mono)."""
    out: list[np.ndarray] = []
    for i, piece in enumerate(pieces):
        out.append(np.asarray(piece, np.float32))
        if i < len(gaps):
            out.append(np.zeros(gaps[i], np.float32))
    return np.concatenate(out) if out else np.zeros(0, np.float32)
