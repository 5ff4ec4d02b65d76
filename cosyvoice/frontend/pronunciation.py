"""Pronunciation overrides: a word's reading, written inline or kept in the user lexicon.

Syntax (one for both languages, see docs/pronunciation.md)::

    {重要|zhong4 yao4}          Mandarin: toned pinyin, one syllable per character
    {重要|zhòng yào}            … or with tone marks (an unmarked syllable is neutral: ma5)
    {tomato|T AH0 M EY1 T OW2}  English: ARPAbet (CMU) phones, stress 0/1/2 on vowels

A :class:`Reading` holds the word and its phones in one canonical form — pinyin with tone
numbers (``zhong4``) or ARPAbet (``EY1``) — and each engine turns that into its own input:
Baker phones (FastSpeech2), espeak IPA (Piper, via :func:`arpabet_to_ipa`), Kokoro's
symbols, CosyVoice3's phone tokens (:func:`cosyvoice3_phones`). :func:`split_at_readings`
cuts a run's text at the words that have a reading, so a G2P phonemizes the rest as usual.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cosyvoice.errors import TextError

LANGS = ("zh", "en")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"^[A-Za-z][A-Za-z'’.-]*(?: [A-Za-z][A-Za-z'’.-]*)*$")

# ARPAbet (CMUdict) phones: vowels take a stress digit 0/1/2 (optional), consonants none.
ARPABET_VOWELS = ("AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW").split()
ARPABET_CONSONANTS = ("B CH D DH F G HH JH K L M N NG P R S SH T TH V W Y Z ZH").split()
# ARPAbet → the IPA espeak-ng writes for American English (what Piper's ids and the Kokoro
# rewrite expect). AH and ER differ unstressed (ə, ɚ) and stressed (ʌ, ɜː).
_IPA = {
    "AA": "ɑː", "AE": "æ", "AH": "ʌ", "AO": "ɔː", "AW": "aʊ", "AY": "aɪ", "EH": "ɛ",
    "ER": "ɜː", "EY": "eɪ", "IH": "ɪ", "IY": "iː", "OW": "oʊ", "OY": "ɔɪ", "UH": "ʊ",
    "UW": "uː", "B": "b", "CH": "tʃ", "D": "d", "DH": "ð", "F": "f", "G": "ɡ", "HH": "h",
    "JH": "dʒ", "K": "k", "L": "l", "M": "m", "N": "n", "NG": "ŋ", "P": "p", "R": "ɹ",
    "S": "s", "SH": "ʃ", "T": "t", "TH": "θ", "V": "v", "W": "w", "Y": "j", "Z": "z",
    "ZH": "ʒ",
}
_IPA_UNSTRESSED = {"AH": "ə", "ER": "ɚ"}
_STRESS_MARK = {"1": "ˈ", "2": "ˌ"}

_TONE_MARKS = {"ā": ("a", 1), "á": ("a", 2), "ǎ": ("a", 3), "à": ("a", 4),
               "ē": ("e", 1), "é": ("e", 2), "ě": ("e", 3), "è": ("e", 4),
               "ī": ("i", 1), "í": ("i", 2), "ǐ": ("i", 3), "ì": ("i", 4),
               "ō": ("o", 1), "ó": ("o", 2), "ǒ": ("o", 3), "ò": ("o", 4),
               "ū": ("u", 1), "ú": ("u", 2), "ǔ": ("u", 3), "ù": ("u", 4),
               "ǖ": ("ü", 1), "ǘ": ("ü", 2), "ǚ": ("ü", 3), "ǜ": ("ü", 4)}
_MARK_OF = {(base, tone): ch for ch, (base, tone) in _TONE_MARKS.items()}


@dataclass(frozen=True)
class Reading:
    """How ``word`` is read: ``phones`` are toned pinyin (``zhong4``, ``lv4``) for
    ``lang == "zh"``, ARPAbet (``EY1``) for ``"en"``. ``source``: inline or lexicon."""

    lang: str
    word: str
    phones: tuple[str, ...]
    source: str = "inline"

    @property
    def text(self) -> str:
        """The reading as a user writes it (``zhong4 yao4``)."""
        return " ".join(self.phones)

    def written(self) -> str:
        """The inline form: ``{重要|zhong4 yao4}``."""
        return "{" + self.word + "|" + self.text + "}"


def word_language(word: str) -> str:
    """"zh" for a word of hanzi, "en" for a Latin-letter word; TextError otherwise."""
    w = word.strip()
    if w and all(_HAN.match(ch) for ch in w):
        return "zh"
    if _LATIN_WORD.match(w):
        return "en"
    raise TextError(f"cannot give a reading to {word!r}: the word must be Chinese "
                    "characters or English letters / 只能为汉字词或英文单词指定读音")


def parse_reading(word: str, reading: str, source: str = "inline") -> Reading:
    """Check ``reading`` for ``word`` and return its canonical :class:`Reading`; a
    :class:`TextError` quotes the override (``{word|reading}``) and says what is wrong."""
    word = unicodedata.normalize("NFC", word.strip())
    shown = "{" + word + "|" + reading.strip() + "}"
    lang = word_language(word)
    tokens = reading.split()
    if not tokens:
        raise TextError(f"{shown}: the reading is empty / 读音为空")
    if lang == "zh":
        phones = _pinyin_reading(tokens, shown)
        n = len(word)
        if len(phones) != n:
            raise TextError(f"{shown}: {n} characters need {n} pinyin syllables, got "
                            f"{len(phones)} / {n} 个汉字需要 {n} 个拼音音节")
    else:
        phones = tuple(_arpabet(t, shown) for t in tokens)
        if not any(p.rstrip("012") in ARPABET_VOWELS for p in phones):
            raise TextError(f"{shown}: an English reading needs at least one vowel (e.g. "
                            "EY1) / 英文读音至少需要一个元音")
    return Reading(lang, word, phones, source)


def _arpabet(token: str, shown: str) -> str:
    t = token.upper()
    base, stress = (t[:-1], t[-1]) if t[-1:] in "012" else (t, "")
    if base in ARPABET_VOWELS or (base in ARPABET_CONSONANTS and not stress):
        return t
    raise TextError(f"{shown}: {token!r} is not an ARPAbet phone (e.g. T AH0 M EY1 T OW2; "
                    "stress digits go on vowels) / 不是 ARPAbet 音素")


def _pinyin_reading(tokens: list[str], shown: str) -> tuple[str, ...]:
    marked = any(ch in _TONE_MARKS for t in tokens for ch in t)
    return tuple(pinyin_syllable(t, shown, neutral_ok=marked) for t in tokens)


def pinyin_syllable(token: str, shown: str = "", neutral_ok: bool = False) -> str:
    """One pinyin syllable with a tone number (``zhong4``, ``lv4``, neutral ``ma5``/``ma0``)
    or tone mark (``zhòng``) → ``zhong4`` (ü written ``v``). An unmarked syllable is
    neutral only when ``neutral_ok`` (the reading uses tone marks)."""
    from cosyvoice.frontend.pinyin import split_pinyin

    shown = shown or token
    s = unicodedata.normalize("NFC", token.strip().lower())
    tone = 0
    if s[-1:] and s[-1] in "0123456789":
        s, tone = s[:-1], int(s[-1]) or 5
    out = []
    for ch in s:
        if ch in _TONE_MARKS:
            base, t = _TONE_MARKS[ch]
            if tone:
                raise TextError(f"{shown}: {token!r} has two tones / 声调重复")
            out.append(base)
            tone = t
        else:
            out.append(ch)
    base = "".join(out).replace("ü", "v").replace("u:", "v")
    if not tone:
        if not neutral_ok:
            raise TextError(f"{shown}: {token!r} has no tone: write zhong4 or zhòng (5 for "
                            "the neutral tone) / 缺少声调，如 zhong4 或 zhòng")
        tone = 5
    if not 1 <= tone <= 5 or not re.fullmatch(r"[a-z]+", base):
        raise TextError(f"{shown}: {token!r} is not pinyin with a tone 1–5 / 不是带声调的拼音")
    try:
        split_pinyin(base)
    except ValueError as e:
        raise TextError(f"{shown}: {token!r} is not a Mandarin syllable / 不是普通话音节") from e
    return f"{base}{tone}"


# ---- finding the words in a run ----------------------------------------------------------

def find_readings(text: str, readings: Iterable[Reading]) -> list[tuple[int, int, Reading]]:
    """Non-overlapping ``(start, end, reading)`` spans of ``text``, longest word first:
    Chinese words anywhere, English words whole and case-insensitively."""
    spans: list[tuple[int, int, Reading]] = []
    taken = [False] * len(text)
    for r in sorted(readings, key=lambda r: -len(r.word)):
        if r.lang == "zh":
            pattern = re.escape(r.word)
        else:
            pattern = r"(?<![A-Za-z'’])" + re.escape(r.word) + r"(?![A-Za-z'’])"
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            if not any(taken[m.start():m.end()]):
                spans.append((m.start(), m.end(), r))
                taken[m.start():m.end()] = [True] * (m.end() - m.start())
    return sorted(spans, key=lambda s: s[0])


def split_at_readings(text: str, readings: Iterable[Reading]) -> list[str | Reading]:
    """``text`` as pieces: plain strings, and a :class:`Reading` where its word stood."""
    out: list[str | Reading] = []
    pos = 0
    for start, end, r in find_readings(text, readings):
        if start > pos:
            out.append(text[pos:start])
        out.append(r)
        pos = end
    if pos < len(text):
        out.append(text[pos:])
    return out


def readings_in(text: str, lang: str, *sources: Mapping[str, Reading]) -> dict[str, Reading]:
    """The readings of ``sources`` (earlier ones win) whose word occurs in ``text`` (a run
    of language ``lang``), keyed by the word as written. A plain substring test comes
    before each word's regex: a full lexicon (5,000 words) costs a few ms per run, not a
    regex compile per word (Python's regex cache holds 512)."""
    found: dict[str, Reading] = {}
    lowered = text.lower()
    for source in sources:
        for word, r in source.items():
            key = word.lower()
            if (r.lang == lang and key not in found and key in lowered
                    and find_readings(text, [r])):
                found[key] = r
    return found


# ---- conversions for the engines -------------------------------------------------------

def arpabet_to_ipa(phones: Iterable[str]) -> str:
    """ARPAbet → espeak-ng-style IPA, a stress mark before each stressed vowel:
    ``T AH0 M EY1 T OW2`` → ``təmˈeɪtˌoʊ``."""
    out = []
    for p in phones:
        base, stress = (p[:-1], p[-1]) if p[-1:] in "012" else (p, "")
        if base in _IPA_UNSTRESSED and stress in ("0", ""):
            out.append(_IPA_UNSTRESSED[base])
        else:
            out.append(_STRESS_MARK.get(stress, "") + _IPA[base])
    return "".join(out)


def tone_marked(syllable: str) -> str:
    """``zhong4`` → ``zhòng`` (neutral: no mark; ``v`` → ``ü``): the standard placement —
    a or e, else the o of ou, else the last vowel."""
    base, tone = syllable[:-1].replace("v", "ü"), int(syllable[-1])
    if tone == 5:
        return base
    if not any(v in base for v in "aeiouü"):
        return syllable  # a syllabic nasal (嗯 n2, 呣 m2) has no vowel to mark
    if "a" in base or "e" in base:
        i = base.index("a") if "a" in base else base.index("e")
    elif "ou" in base:
        i = base.index("o")
    else:
        i = max(base.rfind(v) for v in "iouü")
    return base[:i] + _MARK_OF[(base[i], tone)] + base[i + 1:]


_CV3_INITIALS = ("zh", "ch", "sh", "b", "p", "m", "f", "d", "t", "n", "l", "g", "k", "h",
                 "j", "q", "x", "r", "z", "c", "s", "y", "w")


def cosyvoice3_phones(reading: Reading) -> list[str]:
    """The phone tokens CosyVoice3 was trained on for ``reading``: ``[T][AH0]…`` for
    English; for pinyin the initial and the tone-marked final, ``[zh][òng][y][ào]``."""
    if reading.lang == "en":
        return [f"[{p}]" for p in reading.phones]
    out = []
    for syl in reading.phones:
        marked = tone_marked(syl)
        initial = next((i for i in _CV3_INITIALS if marked.startswith(i)
                        and len(marked) > len(i)), "")
        final = marked[len(initial):]
        if final[:1] == "ü" and len(final) > 1:
            final = "v" + final[1:]  # the model writes lüè as [l][vè]
        out += ([f"[{initial}]"] if initial else []) + [f"[{final}]"]
    return out


def with_phone_tokens(text: str, readings: Mapping[str, Reading],
                      known: Iterable[str]) -> tuple[str, list[Reading]]:
    """``text`` with each word that has a reading replaced by its CosyVoice3 phone tokens
    (:func:`cosyvoice3_phones`), and the readings left as words because a token is not in
    ``known`` (the model's phone tokens)."""
    known = set(known)
    out, skipped = [], []
    for piece in split_at_readings(text, readings.values()):
        if isinstance(piece, str):
            out.append(piece)
            continue
        tokens = cosyvoice3_phones(piece)
        if all(t in known for t in tokens):
            out.append("".join(tokens))
        else:
            out.append(piece.word)
            skipped.append(piece)
    return "".join(out), skipped
