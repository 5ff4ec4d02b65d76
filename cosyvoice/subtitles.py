"""Subtitles: timed cues written as SRT or WebVTT.

A :class:`Cue` is a stretch of the output audio (seconds from its start) and the text
spoken in it. Cues come from wherever the timing is known — sentence boundaries of a
synthesis, the items of a dialogue or a batch job — and are written by one formatter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cosyvoice.files import write_text_atomic

_BLANK_LINES = re.compile(r"\n\s*\n+")


@dataclass(frozen=True)
class Cue:
    """``text`` is heard from ``start_s`` to ``end_s`` (seconds from the audio's start)."""

    start_s: float
    end_s: float
    text: str

    def __post_init__(self) -> None:
        if not (0.0 <= self.start_s <= self.end_s):
            raise ValueError(f"a cue must have 0 <= start <= end, got {self.start_s:.3f} "
                             f"→ {self.end_s:.3f}")


def shifted(cues: Iterable[Cue], offset_s: float) -> list[Cue]:
    """The cues moved ``offset_s`` later (to place one part's cues inside a joined file)."""
    return [Cue(c.start_s + offset_s, c.end_s + offset_s, c.text) for c in cues]


def _stamp(seconds: float, sep: str) -> str:
    ms = int(round(seconds * 1000))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def _cue_text(text: str) -> str:
    """A cue's text with no blank line inside (a blank line ends a cue in both formats)
    and no ``-->`` (it marks a timing line)."""
    text = _BLANK_LINES.sub("\n", text.strip().replace("\r\n", "\n").replace("\r", "\n"))
    return text.replace("-->", "→")


def to_srt(cues: Iterable[Cue]) -> str:
    """SubRip: numbered cues, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``, a blank line after each."""
    blocks = [f"{i}\n{_stamp(c.start_s, ',')} --> {_stamp(c.end_s, ',')}\n{_cue_text(c.text)}\n"
              for i, c in enumerate(cues, 1)]
    return "\n".join(blocks)


def to_vtt(cues: Iterable[Cue]) -> str:
    """WebVTT: the ``WEBVTT`` header, then ``HH:MM:SS.mmm --> HH:MM:SS.mmm`` cues."""
    blocks = [f"{_stamp(c.start_s, '.')} --> {_stamp(c.end_s, '.')}\n{_cue_text(c.text)}\n"
              for c in cues]
    return "\n".join(["WEBVTT\n", *blocks])


def write_beside(audio_path: str | Path, cues: Iterable[Cue]) -> tuple[Path, Path]:
    """Write ``<audio>.srt`` and ``<audio>.vtt`` next to an output file (each replaced
    atomically); returns their paths."""
    cues = list(cues)
    out = []
    for suffix, text in ((".srt", to_srt(cues)), (".vtt", to_vtt(cues))):
        out.append(write_text_atomic(Path(audio_path).with_suffix(suffix), text,
                                     durable=False))
    return out[0], out[1]


def clamp_cues(cues: list[Cue], duration_s: float) -> list[Cue]:
    """Cues inside the output (the last sample's rounding) and not overlapping: a cue ends
    where the next begins at the latest (the cross-fade shares a few ms)."""
    out = []
    for i, c in enumerate(cues):
        end = min(c.end_s, duration_s, cues[i + 1].start_s if i + 1 < len(cues) else duration_s)
        start = min(c.start_s, end)
        out.append(Cue(start, end, c.text))
    return out
