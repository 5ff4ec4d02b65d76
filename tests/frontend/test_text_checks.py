"""Text checks: actionable errors and script detection."""

import pytest

from cosyvoice.errors import CosyVoiceError, TextError
from cosyvoice.frontend.text_checks import check_script, check_text, detect_script


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", None])
def test_empty(text: str | None) -> None:
    with pytest.raises(TextError, match=r"^Please type some text to synthesize\.$"):
        check_text(text, 1000)


def test_too_long_message_names_the_setting() -> None:
    with pytest.raises(TextError) as info:
        check_text("x" * 1234, 1000)
    assert str(info.value) == (
        "Text is 1,234 characters; the limit is 1,000 — split it or raise "
        "COSYVOICE_MAX_TEXT_CHARS."
    )
    assert isinstance(info.value, CosyVoiceError) and info.value.http_status == 422


def test_limit_is_inclusive() -> None:
    assert check_text("x" * 1000, 1000) == "x" * 1000


@pytest.mark.parametrize(
    "text", ["😀😀!!", "...?!", "<b></b>", "\u200b\u200b\u200b", "★ ♥ → ©", "\x00\x01"]
)
def test_nothing_speakable(text: str) -> None:
    with pytest.raises(TextError, match=r"no speakable words \(only symbols/emoji\)"):
        check_text(text, 1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hello <b>world</b>!  ", "Hello world!"),
        ("Room 101", "Room 101"),
        ("你好\u200b世界", "你好世界"),
        ("Hi 😀", "Hi 😀"),
    ],
)
def test_returns_cleaned_text(text: str, expected: str) -> None:
    assert check_text(text, 1000) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello there", "en"),
        ("Café au lait", "en"),
        ("ＡＢＣ", "en"),
        ("123 456", "en"),
        ("你好世界", "zh"),
        ("圆周率是3.14。", "zh"),
        ("我用GPU合成语音", "mixed"),
        ("Hello 你好", "mixed"),
        ("I met Ivan Петров yesterday", "en"),
        ("مرحبا بالعالم", "other"),
        ("Привет, мир", "other"),
        ("東京は大きい", "other"),
        ("안녕하세요", "other"),
        ("!!! 😀", "other"),
    ],
)
def test_detect_script(text: str, expected: str) -> None:
    assert detect_script(text) == expected


def test_check_script_names_the_script() -> None:
    with pytest.raises(TextError) as info:
        check_script("مرحبا بالعالم")
    assert str(info.value) == (
        "Text is in a script this engine cannot speak yet (Arabic); "
        "supported: English, Mandarin Chinese."
    )
    with pytest.raises(TextError, match=r"\(Cyrillic\)"):
        check_script("Привет, мир")
    assert check_script("Hello 你好") == "mixed"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("今天天气很好，我们去公园の散步吧。", "(Japanese Hiragana: の)"),
        ("我用GPU合成语音，カタカナ。", "(Japanese Katakana: カ タ ナ)"),
        ("Hello 안녕 world, how are you today?", "(Korean Hangul: 안 녕)"),
        ("I met Ivan Петров yesterday", "(Cyrillic: П е т р о в)"),
        ("The α and β particles.", "(Greek: α β)"),
        ("Hello 안녕 and Привет to everyone here today, friends.",
         "(Cyrillic: П р и в е т; Korean Hangul: 안 녕)"),
        ("A long one: абвгдежзийклмн in English words and more English words here.",
         "(Cyrillic: а б в г д е ж з and 6 more)"),
    ],
)
def test_a_few_unsupported_letters_are_named_not_dropped(text: str, named: str) -> None:
    with pytest.raises(TextError) as info:
        check_script(text)
    message = str(info.value)
    assert named in message, message
    assert "cannot speak yet" in message and "remove or replace them" in message


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("안녕하세요, 만나서 반갑습니다", "(Korean Hangul)"),
        ("ありがとうございます", "(Japanese Hiragana)"),
        ("Привет 안녕 мир", "(Cyrillic, Korean Hangul)"),
    ],
)
def test_every_refused_script_is_named(text: str, names: str) -> None:
    with pytest.raises(TextError) as info:
        check_script(text)
    assert names in str(info.value)


def test_supported_letters_pass() -> None:
    assert check_script("Café naïve, ＡＢＣ") == "en"
    assert check_script("圆周率是3.14。") == "zh"
    assert check_script("头发直径约70μm。") == "mixed"  # read as 微米
    with pytest.raises(TextError, match="Greek: μ"):
        check_script("It is 5 μm wide.")  # English cannot read it: named, not dropped
