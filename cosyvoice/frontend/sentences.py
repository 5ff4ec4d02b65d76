"""Sentence splitting for English and Chinese text (language-agnostic rules).

The pipeline synthesizes and streams one chunk per sentence, so a split must never cut
"Dr. Smith", "e.g. this", "3.14" or "U.S. Army", and no piece may exceed ``max_chars``
(over-long sentences are cut at commas, then spaces, then hard).
"""

from __future__ import annotations

import re

# A run of terminators with any closing quotes/brackets after it, or a line break.
_BOUNDARY = re.compile(r"[.!?;。！？；…।॥]+[\"'”’)\]」』》）]*|\n")
_CJK_STOPS = set("。！？；…।॥")  # always end a sentence (with the Devanagari danda)
# Words whose period never ends a sentence (compared lower-case, without the period).
_NO_SPLIT_AFTER = {
    "dr", "mr", "mrs", "ms", "prof", "st", "mt", "vs", "no", "nos", "fig", "figs", "p", "pp",
    "approx", "ca", "cf", "capt", "gen", "lt", "sgt", "rev", "ave", "blvd", "rd", "dept",
    "vol", "ch", "sec", "e.g", "i.e", "a.k.a", "eg", "ie", "ph.d", "jan", "feb", "mar",
    "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
}
_SOFT_BREAK = re.compile(r"[,，、:：—–](?=\s|[^\x00-\x7f])|\s[-–—]\s")


def _word_before(text: str, end: int) -> str:
    """The token that ends just before ``end`` (a period's position)."""
    match = re.search(r"[\w.'-]*$", text[max(0, end - 40):end])  # bounded: no O(n²)
    return match.group(0) if match else ""


def _period_ends_sentence(text: str, start: int, end: int, dots: int) -> bool:
    """Decide whether the "." run at text[start:end] (with closing quotes) ends a sentence."""
    rest = text[end:]
    if rest and not rest[0].isspace() and rest[0].isascii():
        return False  # "3.14", "example.com", "U.S"
    nxt = rest.lstrip()[:1]
    if not nxt:
        return True
    if nxt.islower() or nxt.isdigit():
        return False  # "e.g. this", "No. 5", "approx. 3"
    if dots > 1:
        return True  # "...", followed by a capital or another script
    word = _word_before(text, start)
    if word.lower().rstrip(".") in _NO_SPLIT_AFTER:
        return False
    if re.fullmatch(r"[A-Z]|(?:[A-Za-z]\.)+[A-Za-z]", word):
        return False  # initial "J. Smith", dotted acronym "U.S. Army"
    return True


def _is_boundary(text: str, match: re.Match[str]) -> bool:
    run = match.group(0)
    if run == "\n" or _CJK_STOPS.intersection(run):
        return True
    stops = run.rstrip("\"'”’)]」』》）")
    if set(stops) == {"."}:
        return _period_ends_sentence(text, match.start(), match.end(), len(stops))
    rest = text[match.end():]
    if rest[:1].isascii() and rest[:1].isalnum():
        return False  # glued: "Yahoo!Inc"
    return ";" in stops or not rest.lstrip()[:1].islower()  # '"Why?" she asked'


def _split_long(piece: str, max_chars: int) -> list[str]:
    """Cut a piece longer than max_chars at the last comma, else space, else hard."""
    out = []
    while len(piece) > max_chars:
        window = piece[: max_chars + 1]
        commas = [m.end() for m in _SOFT_BREAK.finditer(window) if m.end() <= max_chars]
        spaces = [m.start() for m in re.finditer(r"\s", window) if m.start() > 0]
        if commas and commas[-1] >= max_chars // 2 or (commas and not spaces):
            cut = commas[-1]
        elif spaces:
            cut = spaces[-1]
        else:
            cut = max_chars
        head, piece = piece[:cut].strip(), piece[cut:].strip()
        if head:
            out.append(head)
    if piece:
        out.append(piece)
    return out


def split_sentences(text: str, max_chars: int = 300) -> list[str]:
    """Split text into sentences no longer than ``max_chars``.

    Boundaries: ``。！？；…`` and the danda ``।`` always; ``;`` unless glued to a
    following letter; ``! ?`` unless glued or followed by a lower-case word ('"Why?" she
    asked');
    ``.`` when followed by a space (or end, or another script) and not after an
    abbreviation, initial or dotted acronym, nor before a lower-case word or a digit;
    line breaks. Terminators and closing quotes stay with their sentence. Pieces with no
    letter or digit (e.g. "...") are dropped.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    pieces, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if _is_boundary(text, match):
            pieces.append(text[start:match.end()])
            start = match.end()
    pieces.append(text[start:])
    out = []
    for piece in pieces:
        piece = piece.strip()
        if re.search(r"\w", piece):
            out.extend(_split_long(piece, max_chars))
    return out
