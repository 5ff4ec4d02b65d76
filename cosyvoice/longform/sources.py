"""Batch job sources → items.

* ``.txt`` / ``.md``: chapters start at headings (Markdown ``#``…``######``; in plain text also
  lines such as ``Chapter 3``, ``PART II``, ``第三章``). A chapter's title is read at its start;
  a chapter longer than the single-request limit is cut into parts at sentence boundaries.
  Text before the first heading is chapter 0 (no title).
* ``.csv``: a header row with ``text`` (required) and optionally ``voice``, ``instruction``,
  ``filename``; one item per row.
* ``.jsonl``: one JSON object per line with the same keys (at most a few levels deep).

Column names and keys are read case-insensitively (``Text`` is ``text``); a header or a
line that names one column twice (``TEXT`` and ``text``) is refused rather than one of
them winning. Every error is a TextError (422) that names the row or line (``row 4: ...``)
and says what to fix.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable

from cosyvoice import bounded_json
from cosyvoice.errors import TextError
from cosyvoice.frontend.sentences import split_sentences
from cosyvoice.longform.items import FILENAME, Item, check_source_text, refuse_surrogates

KINDS = {".txt": "text", ".md": "text", ".markdown": "text", ".csv": "csv", ".jsonl": "jsonl",
         ".ndjson": "jsonl"}
COLUMNS = ("text", "voice", "instruction", "filename")
JSONL_MAX_DEPTH = 4  # a row is one flat object; deeper is refused before it is walked
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_TEXT_HEADING = re.compile(
    r"^\s*(?P<title>(?:chapter|part|book|prologue|epilogue)\b[^\n]{0,60}"
    r"|第[0-9一二三四五六七八九十百千零〇两]+[章节回卷部][^\n]{0,40})\s*$", re.IGNORECASE)


def source_kind(name: str) -> str:
    suffix = ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""
    if suffix not in KINDS:
        raise TextError(f"{name!r}: a job is a .txt or .md text (chapters by headings), or a "
                        ".csv / .jsonl list of lines (text, voice, instruction, filename) / "
                        "任务文件须为 .txt、.md、.csv 或 .jsonl")
    return KINDS[suffix]


def parse_source(name: str, content: str, voice: str | None, instruction: str,
                 part_chars: int) -> list[Item]:
    """The items of an uploaded job file (``voice``/``instruction``: the job's defaults,
    which a CSV/JSONL row may override)."""
    kind = source_kind(name)
    check_source_text(content, "row" if kind == "csv" else "line")
    if kind == "text":
        items = chapter_items(content, voice, instruction, part_chars)
    else:
        rows = csv_rows(content) if kind == "csv" else jsonl_rows(content)
        items = [_row_item(where, row, voice, instruction) for where, row in rows]
    if not items:
        raise TextError(f"{name!r} has nothing to speak / 文件中没有可朗读的文本")
    _name_files(items)
    return items


# ---- chapters ---------------------------------------------------------------------------
def split_chapters(content: str) -> list[tuple[str, str]]:
    """``[(title, body)]`` in order; text before the first heading has title ``""``."""
    chapters: list[tuple[str, list[str]]] = [("", [])]
    for line in content.splitlines():
        m = _MD_HEADING.match(line) or _TEXT_HEADING.match(line)
        if m:
            chapters.append((m.group("title").strip(), []))
        else:
            chapters[-1][1].append(line)
    out = [(title, "\n".join(body).strip()) for title, body in chapters]
    return [(t, b) for t, b in out if t or b]


def pack_parts(text: str, max_chars: int) -> list[str]:
    """The text cut into parts of at most ``max_chars``, each ending at a sentence end
    (a sentence longer than that is cut by the sentence splitter at a comma or space)."""
    parts: list[str] = []
    current = ""
    for sentence in split_sentences(text, max_chars):
        if current and len(current) + 1 + len(sentence) > max_chars:
            parts.append(current)
            current = ""
        current = f"{current}\n{sentence}" if current else sentence
    if current:
        parts.append(current)
    return parts


def chapter_items(content: str, voice: str | None, instruction: str,
                  part_chars: int) -> list[Item]:
    items = []
    chapters = split_chapters(content)
    first = 1 if chapters and chapters[0][0] else 0  # 0: the text before the first heading
    for c, (title, body) in enumerate(chapters, first):
        text = f"{title}\n{body}" if title else body
        parts = pack_parts(text, part_chars)
        for p, part in enumerate(parts, 1):
            where = f"chapter {c}" + (f" ({title[:40]})" if title else "") + (
                f", part {p}" if len(parts) > 1 else "")
            stem = _slug(title) or "text"
            items.append(Item(part, voice, instruction, where=where, group=f"chapter {c}",
                              filename=f"{c:03d}-{stem}-{p:02d}.wav"))
    return items


# ---- lists of lines ----------------------------------------------------------------------
def csv_rows(content: str) -> Iterable[tuple[str, dict]]:
    reader = csv.reader(io.StringIO(content.lstrip("\ufeff")))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        return []
    except csv.Error as e:
        raise TextError(f"row 1: cannot read the CSV header ({e})") from None
    _check_columns(header, "the CSV header")
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise TextError(f"row 1: the CSV header names {', '.join(map(repr, twice))} twice "
                        "(column names are read case-insensitively); keep one")
    rows = []
    try:
        for values in reader:
            where = f"row {reader.line_num}"
            if not any(v.strip() for v in values):
                continue
            if len(values) > len(header):
                raise TextError(f"{where}: {len(values)} fields but the header has "
                                f"{len(header)}; quote fields that contain commas")
            rows.append((where, dict(zip(header, values))))
    except csv.Error as e:
        raise TextError(f"row {reader.line_num}: not valid CSV ({e})") from None
    return rows


def jsonl_rows(content: str) -> list[tuple[str, dict]]:
    rows = []
    for number, line in enumerate(content.lstrip("\ufeff").splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            row = bounded_json.loads(line, JSONL_MAX_DEPTH, unique_keys=True)
        except bounded_json.JsonError as e:
            raise TextError(f"{where}: not valid JSON ({e})") from None
        if not isinstance(row, dict):
            raise TextError(f"{where}: write a JSON object such as "
                            '{"text": "Hello.", "voice": "af_heart"}')
        _check_columns([k.lower() for k in row], where)
        for value in row.values():
            if isinstance(value, str):
                refuse_surrogates(value, where)
        rows.append((where, _lower_keys(row, where)))
    return rows


def _lower_keys(row: dict, where: str) -> dict:
    """The row with lower-case keys; two keys that differ only in case (``TEXT`` and
    ``text``) are ambiguous: a TextError naming both."""
    out: dict = {}
    seen: dict[str, str] = {}
    for key, value in row.items():
        low = key.lower()
        if low in seen:
            raise TextError(f"{where}: the keys {seen[low]!r} and {key!r} name the same "
                            "column (keys are read case-insensitively); keep one")
        seen[low], out[low] = key, value
    return out


def _check_columns(names: list[str], where: str) -> None:
    unknown = [n for n in names if n not in COLUMNS]
    if unknown or "text" not in names:
        raise TextError(f"{where}: columns must be text (required), voice, instruction, "
                        f"filename; " + (f"unknown: {', '.join(unknown)}" if unknown
                                         else "'text' is missing"))


def _row_item(where: str, row: dict, voice: str | None, instruction: str) -> Item:
    def field(key: str) -> str:
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            raise TextError(f"{where}: {key} must be a string")
        return (value or "").strip()

    text = field("text")
    if not text:
        raise TextError(f"{where}: the text is empty / 第 {where} 文本为空")
    filename = field("filename")
    if filename:
        if not filename.lower().endswith(".wav"):
            filename += ".wav"
        if not FILENAME.match(filename):
            raise TextError(f"{where}: filename {filename!r} may hold letters, digits, '.', "
                            "'-' and '_' only (no folders)")
    return Item(text, field("voice") or voice, field("instruction") or instruction,
                where=where, group=field("voice") or voice or "", filename=filename)


def _name_files(items: list[Item]) -> None:
    """Number unnamed items (``0007.wav``); a file name used twice is an error naming the
    second row."""
    seen: dict[str, str] = {}
    for i, item in enumerate(items, 1):
        item.filename = item.filename or f"{i:04d}.wav"
        key = item.filename.lower()
        if key in seen:
            raise TextError(f"{item.where}: filename {item.filename!r} is used by "
                            f"{seen[key]} already")
        seen[key] = item.where


def _slug(title: str) -> str:
    return re.sub(r"[^\w]+", "-", title.lower()).strip("-")[:40]
