"""Sentence splitting: English and Chinese punctuation, abbreviations, long sentences."""

import pytest

from cosyvoice.frontend.sentences import split_sentences

CASES = [
    ("Hello world. How are you? Fine!", ["Hello world.", "How are you?", "Fine!"]),
    ("Dr. Smith met Mr. Jones. They talked.", ["Dr. Smith met Mr. Jones.", "They talked."]),
    ("Fruit, e.g. apples, is good. Yes.", ["Fruit, e.g. apples, is good.", "Yes."]),
    ("E.g. This one. And that.", ["E.g. This one.", "And that."]),
    ("Pi is 3.14 exactly. Next.", ["Pi is 3.14 exactly.", "Next."]),
    ("The U.S. Army is big. It grew.", ["The U.S. Army is big.", "It grew."]),
    ("J. K. Rowling wrote it. Then she rested.",
     ["J. K. Rowling wrote it.", "Then she rested."]),
    ("See No. 5 and approx. 3 more. Done.", ["See No. 5 and approx. 3 more.", "Done."]),
    ("Visit example.com today. Bye.", ["Visit example.com today.", "Bye."]),
    ("First; second; third.", ["First;", "second;", "third."]),
    ('"Why?" she asked. "Because." He left.', ['"Why?" she asked.', '"Because."', "He left."]),
    ("Wait... What? ... ok then.", ["Wait...", "What?", "... ok then."]),
    ("Yahoo!Inc is a name. Ok.", ["Yahoo!Inc is a name.", "Ok."]),
    ("Line one\nLine two", ["Line one", "Line two"]),
    ("Trailing text without stop", ["Trailing text without stop"]),
    ("... !!! ?", []),
    ("", []),
    # Chinese
    ("你好。我很好！你呢？", ["你好。", "我很好！", "你呢？"]),
    ("今天天气不错；我们出去吧……好的", ["今天天气不错；", "我们出去吧……", "好的"]),
    ("他说：“走吧。”然后走了。", ["他说：“走吧。”", "然后走了。"]),
    ("圆周率是3.14。对吗？", ["圆周率是3.14。", "对吗？"]),
    # mixed
    ("Hello world. 你好世界。Mixed GPU 很快!", ["Hello world.", "你好世界。", "Mixed GPU 很快!"]),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:30] for c in CASES])
def test_split(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_long_english_sentence_cut_at_commas() -> None:
    text = "one, two, three, four, five, six, seven, eight, nine, ten."
    pieces = split_sentences(text, max_chars=20)
    assert pieces == ["one, two, three,", "four, five, six,", "seven, eight, nine,", "ten."]


def test_long_sentence_without_commas_cut_at_spaces() -> None:
    text = " ".join(["word"] * 40) + "."
    pieces = split_sentences(text, max_chars=50)
    assert all(len(p) <= 50 for p in pieces)
    assert " ".join(pieces) == text


def test_long_chinese_cut_at_commas_then_hard() -> None:
    pieces = split_sentences("这是一个很长的句子，" * 30, max_chars=45)
    assert [len(p) for p in pieces] == [40] * 7 + [20]
    assert all(p.endswith("，") for p in pieces)
    hard = split_sentences("字" * 700, max_chars=300)
    assert [len(p) for p in hard] == [300, 300, 100]


@pytest.mark.parametrize("max_chars", [10, 37, 80, 300])
def test_no_piece_exceeds_limit(max_chars: int) -> None:
    text = ("Dr. Smith said, in 2026, that GPUs are fast; 你好，世界，这是测试。 "
            "Supercalifragilisticexpialidocious-words-are-long! ") * 5
    pieces = split_sentences(text, max_chars=max_chars)
    assert pieces and all(0 < len(p) <= max_chars for p in pieces)
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")


def test_invalid_limit() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        split_sentences("Hi.", max_chars=0)
