"""Inline tags in the text: pauses, breaths and emphasis.

    Hello there. [pause:800ms] How are you?      a pause (ms or s; [pause] alone = 500 ms)
    Take a deep breath [breath] and go on.       a breathing pause (a soft breath noise)
    I said <strong>yes</strong>, not maybe.      emphasis: higher, wider pitch, louder, slower
    这很{重要|zhong4 yao4}。 A {tomato|T AH0 M EY1 T OW2}.   a word's reading (pronunciation.py)

Tags are parsed before the text is cleaned (cleaning drops other HTML/SSML-like markup).
A malformed tag is an error with the tag quoted, never silently spoken or dropped:
``[pause:abc]``, a pause outside 50 ms – 5 s, ``<strong>`` left open or closed twice, a
brace without its pair or without ``word|reading`` inside, a reading that is not pinyin or
ARPAbet. An override's word stays in the text (it is cleaned, split and normalized like
any other word); its :class:`~cosyvoice.frontend.pronunciation.Reading` travels with the
segment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cosyvoice.errors import TextError
from cosyvoice.frontend.pronunciation import Reading, parse_reading

PAUSE_DEFAULT_S = 0.5
PAUSE_RANGE_S = (0.05, 5.0)
BREATH_S = 0.35
EMPHASIS_TAGS = ("strong", "emphasis", "em")

_TAG = re.compile(
    r"\[\s*(?P<kind>pause|breath)\s*(?::\s*(?P<arg>[^\]]*))?\]"
    r"|<\s*(?P<close>/)?\s*(?P<emph>" + "|".join(EMPHASIS_TAGS) + r")\s*>"
    r"|\{(?P<override>[^{}]*)\}|(?P<stray>[{}])",
    re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$", re.IGNORECASE)


@dataclass
class Segment:
    """A stretch of text, whether it is emphasized, and the pause that follows it."""

    text: str
    emphasis: bool = False
    pause_after_s: float = 0.0
    breath_after: bool = False
    readings: list[Reading] = field(default_factory=list)  # inline overrides in ``text``


def _pause_seconds(arg: str | None, tag: str) -> float:
    if arg is None or not arg.strip():
        return PAUSE_DEFAULT_S
    m = _DURATION.match(arg)
    if not m:
        raise TextError(f"cannot read the pause {tag!r}: write e.g. [pause:500ms] or "
                        "[pause:1.5s] / 停顿写法如 [pause:500ms]")
    value = float(m.group(1))
    if (m.group(2) or "s").lower() == "ms":
        value /= 1000.0
    lo, hi = PAUSE_RANGE_S
    if not lo <= value <= hi:
        raise TextError(f"the pause {tag!r} is {value:g} s; pauses go from {lo * 1000:g} ms "
                        f"to {hi:g} s / 停顿须在 {lo * 1000:g} 毫秒到 {hi:g} 秒之间")
    return value


def parse_inline(text: str) -> list[Segment]:
    """Split ``text`` at its tags. Pauses attach to the segment before them (a pause at
    the very start is dropped: there is nothing to pause after); consecutive pauses add."""
    segments = [Segment("")]
    emphasis = False
    pos = 0
    for m in _TAG.finditer(text):
        segments[-1].text += text[pos:m.start()]
        pos = m.end()
        tag = m.group(0)
        if m.group("override") is not None or m.group("stray"):
            reading = _override(m, text)
            segments[-1].text += reading.word
            segments[-1].readings.append(reading)
            continue
        if m.group("kind"):
            kind = m.group("kind").lower()
            if len(segments) > 1 and not segments[-1].text.strip():
                segments.pop()  # pauses in a row: they all follow the same text
            if kind == "breath":
                if m.group("arg") and m.group("arg").strip():
                    raise TextError(f"{tag!r}: [breath] takes no value / [breath] 不带参数")
                segments[-1].pause_after_s += BREATH_S
                segments[-1].breath_after = True
            else:
                segments[-1].pause_after_s += _pause_seconds(m.group("arg"), tag)
            segments.append(Segment("", emphasis))
            continue
        closing = bool(m.group("close"))
        if closing != emphasis:
            what = "closes an emphasis that was not opened" if closing else \
                "opens an emphasis inside another"
            raise TextError(f"{tag!r} {what} / 强调标记不成对")
        emphasis = not closing
        segments.append(Segment("", emphasis))
    segments[-1].text += text[pos:]
    if emphasis:
        raise TextError("an emphasis tag <strong> is not closed: add </strong> / "
                        "强调标记 <strong> 缺少 </strong>")
    max_pause = PAUSE_RANGE_S[1]
    for seg in segments:
        if seg.pause_after_s > max_pause:
            raise TextError(f"pauses in a row add up to {seg.pause_after_s:g} s; at most "
                            f"{max_pause:g} s / 连续停顿过长")
    return [s for s in segments if s.text.strip() or s.pause_after_s]


def _override(m: re.Match, text: str) -> Reading:
    """``{word|reading}`` → its checked Reading; a brace without its pair or a body
    without a bar is an error quoting it."""
    if m.group("stray"):
        around = text[max(0, m.start() - 12): m.end() + 12]
        raise TextError(f"a brace {m.group('stray')!r} without its pair near {around!r}: "
                        "write a reading as {word|reading}, e.g. {重要|zhong4 yao4} or "
                        "{tomato|T AH0 M EY1 T OW2} / 花括号不成对；读音写法如 {重要|zhong4 yao4}")
    body = m.group("override")
    if body.count("|") != 1 or not body.split("|")[0].strip():
        raise TextError(f"cannot read the override {m.group(0)!r}: write {{word|reading}}, "
                        "e.g. {重要|zhong4 yao4} or {tomato|T AH0 M EY1 T OW2} / "
                        "读音写法如 {重要|zhong4 yao4}")
    word, reading = body.split("|")
    return parse_reading(word, reading)
