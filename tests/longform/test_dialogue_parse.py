"""Dialogue script parsing: golden line lists, and errors that name the line."""

from __future__ import annotations

import pytest

from cosyvoice.errors import TextError
from cosyvoice.longform.dialogue import parse_script


def parse(script: str, **kw):
    kw = {"max_lines": 50, "max_chars": 5000, **kw}
    return [(ln.number, ln.voice, ln.instruction, ln.text) for ln in parse_script(script, **kw)]


def test_golden_script():
    script = ("# The meeting\n"
              "[Alice|happy] Hello! [pause:300ms] Lovely day.\n"
              "\n"
              "[老王] 你好。\n"
              "吃了吗？\n"
              "[pause] Still Wang, after a pause.\n"
              "[ af_bella:2+af_sky:1 | speak slowly ] Blend here.\n"
              "[Alice] Bye <strong>now</strong>.\n")
    assert parse(script) == [
        (2, "Alice", "happy", "Hello! [pause:300ms] Lovely day."),
        (4, "老王", "", "你好。"),
        (5, "老王", "", "吃了吗？"),
        (6, "老王", "", "[pause] Still Wang, after a pause."),
        (7, "af_bella:2+af_sky:1", "speak slowly", "Blend here."),
        (8, "Alice", "", "Bye <strong>now</strong>."),
    ]


def test_inline_tags_at_line_start_continue_the_speaker():
    assert parse("[joe] One.\n[breath] Two.\n[PAUSE:1s] Three.") == [
        (1, "joe", "", "One."), (2, "joe", "", "[breath] Two."),
        (3, "joe", "", "[PAUSE:1s] Three.")]


def test_instruction_carries_to_untagged_lines_and_resets_on_a_new_tag():
    assert parse("[joe|angry] A.\nB.\n[joe] C.") == [
        (1, "joe", "angry", "A."), (2, "joe", "angry", "B."), (3, "joe", "", "C.")]


@pytest.mark.parametrize("script, line, words", [
    ("Hello.\n[joe] Hi.", 1, "no speaker yet"),
    ("[joe] Hi.\n[bob Hello.", 2, "not closed"),
    ("[joe] Hi.\n\n[|happy] Hello.", 3, "names no voice"),
    ("[joe] Hi.\n[joe]", 2, "no text"),
])
def test_bad_tags_name_the_line(script, line, words):
    with pytest.raises(TextError, match=rf"^line {line}: .*{words}"):
        parse(script)


def test_limits():
    with pytest.raises(TextError, match="line 4: the script has more than 3 lines"):
        parse("[joe] a.\nb.\nc.\nd.", max_lines=3)
    with pytest.raises(TextError, match="the limit is 10"):
        parse("[joe] " + "a" * 20, max_chars=10)
    with pytest.raises(TextError, match="no lines"):
        parse("# only a comment\n\n")


def test_default_voice_speaks_untagged_first_lines():
    assert parse("Hi.", default_voice="joe") == [(1, "joe", "", "Hi.")]
