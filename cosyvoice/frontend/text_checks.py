"""Input checks for the text to synthesize, with messages a user can act on."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Collection

from cosyvoice.errors import TextError
from cosyvoice.frontend.clean import clean_text
from cosyvoice.settings import env_name

SUPPORTED_SCRIPTS = "English, Mandarin Chinese"


def _is_speakable(ch: str) -> bool:
    """Letters and digits of any script; emoji, punctuation and marks are not."""
    return unicodedata.category(ch)[0] in "LN"


def check_text(text: str | None, max_chars: int) -> str:
    """Validate user text and return it cleaned (see ``clean_text``).

    Raises ``TextError`` when the text is empty, longer than ``max_chars`` (counted on
    the stripped input, as the user typed it) or has no letter or digit after cleaning.
    """
    check_length(text, max_chars)
    cleaned = clean_text(text)
    check_speakable(cleaned)
    return cleaned


def check_length(text: str | None, max_chars: int) -> None:
    """``TextError`` when ``text`` is empty or longer than ``max_chars`` (as typed)."""
    if text is None or not text.strip():
        raise TextError("Please type some text to synthesize.")
    length = len(text.strip())
    if length > max_chars:
        raise TextError(
            f"Text is {length:,} characters; the limit is {max_chars:,} — split it or "
            f"raise {env_name('max_text_chars')}."
        )


def check_speakable(cleaned: str) -> None:
    """``TextError`` when cleaned text has no letter or digit of any script."""
    if not any(_is_speakable(ch) for ch in cleaned):
        raise TextError("The text has no speakable words (only symbols/emoji).")


def script_of(ch: str) -> str | None:
    """"latin", "cjk", another script's name ("ARABIC") or None for non-letters."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(ch, "")
    if name.startswith("LATIN"):
        return "latin"
    if name.startswith("CJK") or ch == "〇":
        return "cjk"
    return name.split(" ")[0] or "UNKNOWN"


def _script_counts(text: str) -> Counter[str]:
    text = unicodedata.normalize("NFKC", text)  # full-width Latin → Latin
    return Counter(s for s in map(script_of, text) if s)


def detect_script(text: str) -> str:
    """"en", "zh", "mixed" or "other", by counting letters per script.

    Latin letters count for English, CJK ideographs for Chinese. Text is "other" when
    letters of other scripts (Arabic, Cyrillic, kana, Hangul ...) make up a third or more
    of its letters, or when it has neither letters nor digits. Digits alone count as
    English (the English frontend reads them). This is a script test, not a language
    test: French is "en" here, and kanji-only Japanese is "zh".
    """
    counts = _script_counts(text)
    latin, cjk = counts.pop("latin", 0), counts.pop("cjk", 0)
    other = sum(counts.values())
    if latin + cjk + other == 0:
        return "en" if any(ch.isdigit() for ch in text) else "other"
    if other * 2 >= latin + cjk:
        return "other"
    if latin and cjk:
        return "mixed"
    return "zh" if cjk else "en"


_SCRIPT_NAMES = {"latin": "Latin", "cjk": "Chinese characters", "DEVANAGARI": "Devanagari",
                 "HIRAGANA": "Japanese Hiragana", "KATAKANA": "Japanese Katakana",
                 "KATAKANA-HIRAGANA": "Japanese Katakana", "HANGUL": "Korean Hangul",
                 "BOPOMOFO": "Bopomofo (Zhuyin)", "IDEOGRAPHIC": "CJK symbol"}
SHOWN_PER_SCRIPT = 8
_MICROMETRE = re.compile(r"[µμ]m(?![A-Za-z])")


def unsupported_letters(text: str, allowed: Collection[str] = ("latin", "cjk")
                        ) -> dict[str, list[str]]:
    """Letters of scripts outside ``allowed`` (:func:`script_of` names), by script name
    (most letters first), each with its distinct characters in order of appearance."""
    chars: dict[str, list[str]] = {}
    counts: Counter[str] = Counter()
    for ch in unicodedata.normalize("NFKC", text):  # full-width Latin → Latin
        script = script_of(ch)
        if script is None or script in allowed:
            continue
        name = _SCRIPT_NAMES.get(script, script.title())
        counts[name] += 1
        seen = chars.setdefault(name, [])
        if ch not in seen:
            seen.append(ch)
    return {name: chars[name] for name, _ in counts.most_common()}


def check_script(text: str) -> str:
    """``detect_script``, raising ``TextError`` when any letter is in a script the engine
    cannot speak — the whole text (naming its script), or a few letters inside English or
    Chinese (naming every such script and its characters, so nothing is dropped
    silently)."""
    script = detect_script(text)
    if script in ("zh", "mixed"):  # the Chinese frontend reads "μm" as 微米
        text = _MICROMETRE.sub("m", text)
    letters = unsupported_letters(text)
    if script == "other":
        names = ", ".join(letters) if letters else "no letters"
        raise TextError(
            f"Text is in a script this engine cannot speak yet ({names}); "
            f"supported: {SUPPORTED_SCRIPTS}."
        )
    if letters:
        raise TextError(
            "Text has characters in a script this engine cannot speak yet ("
            + describe_letters(letters) + f") — remove or replace them; supported: "
            f"{SUPPORTED_SCRIPTS}."
        )
    return script


def describe_letters(letters: dict[str, list[str]]) -> str:
    """``"Devanagari: न म स and 3 more; Arabic: ..."`` for an error message."""
    parts = []
    for name, chars in letters.items():
        shown = " ".join(chars[:SHOWN_PER_SCRIPT])
        more = f" and {len(chars) - SHOWN_PER_SCRIPT} more" if (
            len(chars) > SHOWN_PER_SCRIPT) else ""
        parts.append(f"{name}: {shown}{more}")
    return "; ".join(parts)
