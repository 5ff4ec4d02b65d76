"""The user lexicon: word → reading, per language, kept in ``models/lexicon.json``.

    {"zh": {"朝阳": "chao2 yang2", "重新": "chong2 xin1"},
     "en": {"Nguyen": "W IH1 N", "tomato": "T AH0 M AA1 T OW2"}}

Applied in the one text pass before G2P, as if each word were written with its inline
override (an inline override of the same word wins). Readings use the inline syntax's
forms (:mod:`cosyvoice.frontend.pronunciation`) and are checked on every write; a bad
entry is a 422 quoting it. Writes hold ``flock(2)`` on ``models/.lexicon.lock`` (the app
and the CLI share it, as saved voices share theirs) and replace the file atomically;
readers re-read it when its mtime changes, so an edit applies to the next request. A
damaged file is set aside (:mod:`cosyvoice.state_files`): the lexicon then reads as empty,
and a write creates a fresh file beside the damaged copy, never over it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from cosyvoice.errors import NotFoundError, TextError
from cosyvoice.files import write_json_atomic
from cosyvoice.frontend.pronunciation import LANGS, Reading, parse_reading
from cosyvoice.state_files import read_json

FILE_NAME = "lexicon.json"
LOCK_NAME = ".lexicon.lock"
MAX_ENTRIES = 5000
WORD_MAX = 40  # characters of a word (a lexicon word is matched in every request's text)
READING_MAX = 200  # characters of its reading


class Lexicon:
    """The lexicon file at ``path``: read (cached by mtime), edited under a file lock."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._cache: tuple[int | None, dict[str, Reading]] = (None, {})
        self._mutex = threading.Lock()

    @classmethod
    def for_settings(cls, settings) -> Lexicon:
        return cls(getattr(settings, "lexicon_file", None)
                   or Path(settings.models_dir) / FILE_NAME)

    # ---- reading ------------------------------------------------------------------------
    def readings(self) -> dict[str, Reading]:
        """Lower-cased word → Reading, as the text pass takes them (re-read on change; a
        damaged file is set aside, and the lexicon reads as empty)."""
        try:
            stamp = self.path.stat().st_mtime_ns
        except OSError:
            return {}
        with self._mutex:
            if self._cache[0] == stamp:
                return self._cache[1]
            entries = self._read_now()
            self._cache = (stamp, entries)
            return entries

    def to_dict(self) -> dict[str, dict[str, str]]:
        """``{"zh": {word: reading}, "en": {...}}``, words sorted."""
        out: dict[str, dict[str, str]] = {lang: {} for lang in LANGS}
        for r in sorted(self.readings().values(), key=lambda r: (r.lang, r.word.lower())):
            out[r.lang][r.word] = r.text
        return out

    def entries(self) -> list[dict[str, str]]:
        """One row per word: ``{"word", "reading", "lang"}``."""
        return [{"word": w, "reading": rd, "lang": lang}
                for lang, words in self.to_dict().items() for w, rd in words.items()]

    # ---- writing ------------------------------------------------------------------------
    def replace(self, data: Mapping) -> dict[str, dict[str, str]]:
        """Replace every entry with ``data`` (the :meth:`to_dict` form, or ``{"entries":
        [{"word", "reading"}, …]}``); all checked before anything is written."""
        entries = _parse(data)
        with self._locked():
            self._read_now()  # a damaged file is set aside, not overwritten
            self._write(entries)
        return self.to_dict()

    def put(self, word: str, reading: str) -> Reading:
        """Add or change one word's reading."""
        r = checked_entry(word, reading)
        with self._locked():
            entries = dict(self._read_now())
            entries[r.word.lower()] = r
            _check_size(entries)
            self._write(entries)
        return r

    def delete(self, word: str) -> None:
        """Remove ``word`` (case-insensitive); NotFoundError when it has no entry."""
        key = word.strip().lower()
        with self._locked():
            entries = dict(self._read_now())
            if key not in entries:
                raise NotFoundError(f"the lexicon has no word {word!r} / 词典中没有 {word!r}")
            del entries[key]
            self._write(entries)

    def _read_now(self) -> dict[str, Reading]:
        """The file's entries; {} when it is missing or damaged (then set aside)."""
        return read_json(self.path, "the lexicon", _parse) or {}

    def _write(self, entries: Mapping[str, Reading]) -> None:
        data: dict[str, dict[str, str]] = {lang: {} for lang in LANGS}
        for r in sorted(entries.values(), key=lambda r: (r.lang, r.word.lower())):
            data[r.lang][r.word] = r.text
        write_json_atomic(self.path, data)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.parent / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _parse(data) -> dict[str, Reading]:
    """Checked readings of a lexicon document; TextError quoting the first bad entry."""
    if not isinstance(data, Mapping):
        raise TextError("a lexicon is a JSON object: {\"zh\": {word: reading}, \"en\": {...}} "
                        "/ 词典格式应为 JSON 对象")
    if "entries" in data:
        rows = data["entries"]
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise TextError("\"entries\" must be a list of {\"word\", \"reading\"} / 词条格式错误")
        pairs = [(str(r.get("word", "")), str(r.get("reading", ""))) for r in rows]
    else:
        unknown = sorted(set(data) - set(LANGS))
        if unknown:
            raise TextError(f"unknown lexicon languages {unknown}: use \"zh\" and \"en\" / "
                            "词典语言只能是 zh 和 en")
        pairs = []
        for lang in LANGS:
            words = data.get(lang) or {}
            if not isinstance(words, Mapping):
                raise TextError(f"\"{lang}\" must map words to readings / 词典格式错误")
            pairs += [(str(w), str(rd)) for w, rd in words.items()]
    entries: dict[str, Reading] = {}
    if len(pairs) > MAX_ENTRIES:  # before any is parsed
        _check_size(pairs)
    for word, reading in pairs:
        r = checked_entry(word, reading)
        if r.word.lower() in entries:
            raise TextError(f"the word {r.word!r} is in the lexicon twice / 词条重复")
        entries[r.word.lower()] = r
    _check_size(entries)
    return entries


def checked_entry(word: str, reading: str) -> Reading:
    """One entry, checked the same way on every way in (REST PUT and POST, the UI's Lexicon
    tab, the file at start): word and reading lengths, then the reading itself."""
    for what, value, most in (("word", word, WORD_MAX), ("reading", reading, READING_MAX)):
        if len(value.strip()) > most:
            raise TextError(f"the {what} {value[:30]!r}… has {len(value.strip())} characters; "
                            f"a lexicon {what} has at most {most} / 词条过长（最多 {most} 字）")
    return parse_reading(word, reading, "lexicon")


def _check_size(entries) -> None:
    if len(entries) > MAX_ENTRIES:
        raise TextError(f"the lexicon holds at most {MAX_ENTRIES} words / 词典最多 "
                        f"{MAX_ENTRIES} 个词条")
