"""Inline tags: [pause:…], [breath], <strong>…</strong> — parsing and their errors."""

from __future__ import annotations

import pytest

from cosyvoice.errors import TextError
from cosyvoice.frontend.inline_tags import BREATH_S, PAUSE_DEFAULT_S, parse_inline


def _view(text):
    return [(s.text.strip(), s.emphasis, round(s.pause_after_s, 3), s.breath_after)
            for s in parse_inline(text)]


@pytest.mark.parametrize("text, expected", [
    ("Hello. [pause:800ms] Bye.", [("Hello.", False, 0.8, False), ("Bye.", False, 0.0, False)]),
    ("Hello [pause:1.5s] bye", [("Hello", False, 1.5, False), ("bye", False, 0.0, False)]),
    ("Hello [pause:2] bye", [("Hello", False, 2.0, False), ("bye", False, 0.0, False)]),
    ("Hello [PAUSE] bye", [("Hello", False, PAUSE_DEFAULT_S, False), ("bye", False, 0, False)]),
    ("Hello [ pause : 300 ms ] bye", [("Hello", False, 0.3, False), ("bye", False, 0, False)]),
    ("Breathe [breath] now", [("Breathe", False, BREATH_S, True), ("now", False, 0, False)]),
    ("A [pause:200ms][pause:300ms] B", [("A", False, 0.5, False), ("B", False, 0, False)]),
    ("I said <strong>yes</strong> today.",
     [("I said", False, 0, False), ("yes", True, 0, False), ("today.", False, 0, False)]),
    ("<emphasis>All</emphasis> of it", [("All", True, 0, False), ("of it", False, 0, False)]),
    ("我说<strong>是</strong>的。[pause:1s]好。",
     [("我说", False, 0, False), ("是", True, 0, False), ("的。", False, 1.0, False),
      ("好。", False, 0, False)]),
    ("plain text, [brackets] and <b>bold</b>", [("plain text, [brackets] and <b>bold</b>",
                                                  False, 0, False)]),
])
def test_segments(text, expected):
    assert _view(text) == expected


@pytest.mark.parametrize("text, phrase", [
    ("Hello [pause:abc] bye", "cannot read the pause"),
    ("Hello [pause:10s] bye", "pauses go from"),
    ("Hello [pause:10ms] bye", "pauses go from"),
    ("A [pause:4s][pause:3s] B", "add up to"),
    ("Hello [breath:2s] bye", "takes no value"),
    ("I said <strong>yes today.", "not closed"),
    ("I said yes</strong> today.", "not opened"),
    ("<strong>a <strong>b</strong></strong>", "inside another"),
])
def test_malformed_tags_are_errors_that_quote_them(text, phrase):
    with pytest.raises(TextError, match=phrase):
        parse_inline(text)
