"""Batch job sources: chapters by headings, parts under the single-request limit at
sentence ends, CSV/JSONL rows, and errors that name the row."""

from __future__ import annotations

import pytest

from cosyvoice.errors import TextError
from cosyvoice.longform.sources import pack_parts, parse_source, split_chapters


def test_chapters_by_markdown_and_plain_text_headings():
    text = ("A foreword.\n\n# The Start\nOne. Two.\n\n## Second part ##\nThree.\n"
            "CHAPTER 3\nFour.\n第四章 结尾\n五。")
    assert split_chapters(text) == [("", "A foreword."), ("The Start", "One. Two."),
                                    ("Second part", "Three."), ("CHAPTER 3", "Four."),
                                    ("第四章 结尾", "五。")]


def test_long_chapter_parts_end_at_sentences_under_the_limit():
    sentences = [f"Sentence number {i} is here." for i in range(40)]
    parts = pack_parts(" ".join(sentences), 100)
    assert all(len(p) <= 100 for p in parts)
    assert [s for p in parts for s in p.split("\n")] == sentences  # whole sentences, in order
    assert len(parts) == 14  # 27-28 chars each, 3 per part (3·28 + 2 ≤ 100)


def test_text_items_golden():
    items = parse_source("book.md", "# Ch One\nHi. Bye.\n# Ch Two\n" + "Word here. " * 12,
                         "af_heart", "", 60)
    assert [(i.where, i.group, i.filename, i.voice, i.text) for i in items] == [
        ("chapter 1 (Ch One)", "chapter 1", "001-ch-one-01.wav", "af_heart",
         "Ch One\nHi.\nBye."),
        ("chapter 2 (Ch Two), part 1", "chapter 2", "002-ch-two-01.wav", "af_heart",
         "Ch Two\n" + "\n".join(["Word here."] * 4)),
        ("chapter 2 (Ch Two), part 2", "chapter 2", "002-ch-two-02.wav", "af_heart",
         "\n".join(["Word here."] * 5)),
        ("chapter 2 (Ch Two), part 3", "chapter 2", "002-ch-two-03.wav", "af_heart",
         "\n".join(["Word here."] * 3)),
    ]


def test_csv_rows_and_defaults():
    csv = ('Text,voice,instruction,filename\n"Hello, you.",joe,,greeting\n'
           "Second.,,happy,\n\n")
    items = parse_source("lines.csv", csv, "af_heart", "calm", 1000)
    assert [(i.where, i.text, i.voice, i.instruction, i.filename) for i in items] == [
        ("row 2", "Hello, you.", "joe", "calm", "greeting.wav"),
        ("row 3", "Second.", "af_heart", "happy", "0002.wav")]


def test_jsonl_rows():
    items = parse_source("l.jsonl", '{"text": "A.", "voice": "joe"}\n\n{"text": "B."}\n',
                         None, "", 1000)
    assert [(i.where, i.text, i.voice) for i in items] == [("line 1", "A.", "joe"),
                                                           ("line 3", "B.", None)]


@pytest.mark.parametrize("name, content, message", [
    ("l.csv", "text,voice\nA.,joe\n,joe\n", r"^row 3: the text is empty"),
    ("l.csv", "text,speaker\nA.,joe\n", r"unknown: speaker"),
    ("l.csv", "voice\njoe\n", r"'text' is missing"),
    ("l.csv", "text\nA.,extra\n", r"^row 2: 2 fields but the header has 1"),
    ("l.csv", "text,filename\nA.,x\nB.,X.wav\n", r"^row 3: filename 'X.wav' is used by row 2"),
    ("l.csv", "text,filename\nA.,../evil\n", r"^row 2: filename '../evil.wav'"),
    ("l.jsonl", '{"text": "A."}\n{"text": 3}\n', r"^line 2: text must be a string"),
    ("l.jsonl", '{"text": "A."}\nnot json\n', r"^line 2: not valid JSON"),
    ("l.jsonl", '["A."]\n', r"^line 1: write a JSON object"),
    ("l.docx", "x", r"a job is a .txt or .md"),
    ("l.txt", "  \n", r"nothing to speak"),
])
def test_bad_rows_are_named(name, content, message):
    with pytest.raises(TextError, match=message):
        parse_source(name, content, None, "", 1000)
