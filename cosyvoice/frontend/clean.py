"""Language-neutral text cleaning and the rule-table machinery both normalizers use.

``clean_text`` runs once per request, in :mod:`cosyvoice.frontend.plan`; the language
normalizers (:func:`~cosyvoice.frontend.en_normalize.normalize_en`,
:func:`~cosyvoice.frontend.zh_normalize.normalize_zh`) receive cleaned text and apply an
ordered table of :data:`Rule` entries with :func:`apply_rules`.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable

# A compiled pattern and its replacement (a string template or a function of the match).
Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str] | str]

_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>", re.S)
_PHONEME_BLOCK = re.compile(r"\[\[|\]\]")  # piper reads [[ ... ]] as raw phonemes
_INVISIBLE = {"Cc", "Cf", "Co", "Cs", "Cn"}
# CJK ideographs and CJK punctuation (full-width ，！？；：（）), not full-width Latin.
_CJK = (
    "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uff01\uff08\uff09\uff0c\uff1a\uff1b\uff1f"
)


def clean_text(text: str) -> str:
    """Strip markup and invisible characters; keep the words.

    Removes HTML/SSML-like tags (their inner text stays), HTML entities (``&amp;`` → &),
    control, format (zero-width, bidi, BOM, soft hyphen), private-use and unassigned
    characters, and piper's ``[[ ]]`` raw-phoneme brackets, then collapses whitespace
    (line breaks are kept, one per run, since they end sentences; spaces between CJK
    characters are dropped). Language-agnostic: nothing English-specific happens here.
    """
    text = _TAG.sub(" ", html.unescape(text))
    text = _PHONEME_BLOCK.sub(" ", text)
    text = "".join(
        ch for ch in text if ch in "\t\n\r" or unicodedata.category(ch) not in _INVISIBLE
    )
    text = re.sub(r"[^\S\n]+", " ", text)  # spaces, tabs, NBSP ... → one space
    text = re.sub(r"\s*\n\s*", "\n", text).strip()  # newlines kept: they end sentences
    text = re.sub(rf"(?<=[{_CJK}]) (?=[{_CJK}])", "", text)  # "世界 <b>你好</b>" → no space
    return re.sub(r" +([,.!?;:%)\]}。，！？；：、])", r"\1", text)


def rule(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Compile one rule's pattern (the tables read as ``(rule(r"..."), repl)``)."""
    return re.compile(pattern, flags)


def apply_rules(text: str, rules: list[Rule]) -> str:
    """Apply an ordered rule table: each pattern replaced everywhere, in order."""
    for pattern, repl in rules:
        text = pattern.sub(repl, text)
    return text
