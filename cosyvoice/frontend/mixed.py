"""Split mixed Chinese / English text into runs, one language each.

``split_mixed("我用iPhone 15打电话")`` →
``[Run("zh", "我用"), Run("en", "iPhone 15"), Run("zh", "打电话")]``; with
``normalize=True`` each run goes through its language's normalizer
(:func:`~cosyvoice.frontend.zh_normalize.normalize_zh`,
:func:`~cosyvoice.frontend.en_normalize.normalize_en`): ``iPhone fifteen``.

Rules for what has no script of its own:

* digits next to a Latin word read in English ("iPhone 15", "RTX 4090", "5G", "3D");
  digits among hanzi read in Chinese ("达到98%" → 百分之九十八, "2026年");
* a number with a unit ("5km", "37℃", "98%") reads in Chinese when a hanzi stands next to
  it ("跑了5km" → 五公里), else in English;
* spaces and punctuation stay with the run before them; a text with no letters and no
  hanzi at all ("123") is Chinese unless ``default="en"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cosyvoice.frontend.en_normalize import normalize_en
from cosyvoice.frontend.zh_normalize import _UNIT_RE, normalize_width, normalize_zh

_HAN = r"[\u3400-\u4dbf\u4e00-\u9fff]+"
# Letters of alphabetic scripts: Latin with its diacritics (é ñ ç ã ő ...) and Devanagari
# (its vowel signs included; not the danda ।, which ends a sentence).
_ALPHA = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff\u0900-\u0963\u0966-\u097f"
_LATIN = rf"[{_ALPHA}](?:[{_ALPHA}'’.-]*[{_ALPHA}])?"
_NUMBER = rf"[-+¥$€£]?\d[\d.,:/~-]*\d?(?:\s?(?:{_UNIT_RE}|%|‰)(?![A-Za-z]))?"
_TOKEN = re.compile(rf"(?P<han>{_HAN})|(?P<num>{_NUMBER})|(?P<latin>{_LATIN})|(?P<other>.)",
                    re.DOTALL)
_HAS_UNIT = re.compile(rf"\d\s?(?:{_UNIT_RE}|%|‰)$")
_CJK_TO_ASCII = str.maketrans("。，！？；：、", ".,!?;:,")
# the same, plus the Devanagari danda, for the G2Ps of the other languages
PUNCTUATION_TO_ASCII = str.maketrans("。，！？；：、।॥", ".,!?;:,..")


@dataclass
class Run:
    """A stretch of text in one language ("zh" or "en"); ``readings``: the pronunciation
    overrides (inline or from the lexicon) of words in it, by lower-cased word."""

    lang: str
    text: str
    readings: dict = field(default_factory=dict, compare=False, repr=False)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is han, num, latin or other (space, punctuation)."""
    return [(m.lastgroup, m.group(0)) for m in _TOKEN.finditer(text)]


def _neighbour(tokens: list[tuple[str, str]], i: int, step: int) -> tuple[str, bool]:
    """Kind of the nearest han/latin/num token from ``i`` in direction ``step``, and
    whether it touches (at most one space between)."""
    j, gap = i + step, 0
    while 0 <= j < len(tokens) and tokens[j][0] == "other":
        gap += 1 if tokens[j][1] == " " else 2
        j += step
    if not 0 <= j < len(tokens):
        return "", False
    return tokens[j][0], gap <= 1


def _number_lang(tokens: list[tuple[str, str]], i: int, default: str) -> str:
    prev, prev_near = _neighbour(tokens, i, -1)
    nxt, _ = _neighbour(tokens, i, 1)
    touches_next = i + 1 < len(tokens) and tokens[i + 1][0] == "latin"
    if _HAS_UNIT.search(tokens[i][1]):
        return "zh" if "han" in (prev, nxt) else ("en" if "latin" in (prev, nxt) else default)
    if (prev == "latin" and prev_near) or touches_next:
        return "en"
    if "han" in (prev, nxt):
        return "zh"
    return "en" if "latin" in (prev, nxt) else default


def split_mixed(text: str, normalize: bool = False, default: str = "zh",
                latin: str = "en") -> list[Run]:
    """Cleaned mixed text → language runs (see the module docstring); empty runs are
    dropped. ``latin``: the language of alphabetic runs (a Spanish voice's sentence:
    ``es``); runs of a language other than English are left to its G2P (espeak-ng reads
    their numbers), with only CJK and Devanagari sentence punctuation made ASCII."""
    tokens = _tokens(normalize_width(text))
    runs: list[Run] = []
    for i, (kind, tok) in enumerate(tokens):
        if kind == "han":
            lang = "zh"
        elif kind == "latin":
            lang = "en"
        elif kind == "num":
            lang = _number_lang(tokens, i, default)
        else:
            lang = runs[-1].lang if runs else ""
        if runs and (lang == runs[-1].lang or not lang):
            runs[-1].text += tok
        elif runs and not runs[-1].lang:
            runs[-1] = Run(lang, runs[-1].text + tok)
        else:
            runs.append(Run(lang, tok))
    runs = [Run(r.lang or default, r.text.strip()) for r in runs]
    if normalize:
        runs = [Run(r.lang, _normalize(r.lang, r.text, latin)) for r in runs]
    if latin != "en":
        runs = [Run(latin if r.lang == "en" else r.lang, r.text) for r in runs]
    return [r for r in runs if r.text.strip(" ，。！？、；：…,.!?;:")]


def _normalize(lang: str, text: str, latin: str) -> str:
    if lang == "zh":
        return normalize_zh(text)
    if latin == "en":
        return normalize_en(text.translate(_CJK_TO_ASCII))
    return text.translate(PUNCTUATION_TO_ASCII)
