"""The text pass for voices of Spanish, French, Italian, Brazilian Portuguese, Hindi and
Japanese: their text is read in the voice's language, digits left to its G2P, Mandarin
runs kept Mandarin, and letters the voice cannot read refused naming its language."""

from __future__ import annotations

import pytest

from cosyvoice.errors import TextError
from cosyvoice.frontend.plan import plan_text


def runs(text: str, language: str | None, voice: str = "v") -> list[list[tuple[str, str]]]:
    return [[(r.lang, r.text) for r in s.runs] for s in plan_text(text, 500, language, voice)]


@pytest.mark.parametrize("text, language, expected", [
    # Latin text is the voice's language, diacritics kept; digits are not spelled in English
    ("Il y a 42 personnes à Noël.", "fr", [[("fr", "Il y a 42 personnes à Noël.")]]),
    ("¡Hola! ¿Qué tal, señor Núñez?", "es",
     [[("es", "¡Hola!")], [("es", "¿Qué tal, señor Núñez?")]]),
    ("Perché no? Così è la vita.", "it", [[("it", "Perché no?")], [("it", "Così è la vita.")]]),
    ("Não sei, coração.", "pt-br", [[("pt-br", "Não sei, coração.")]]),
    # a Mandarin run inside the sentence stays Mandarin (a Mandarin voice reads it)
    ("J'aime le thé 我喜欢喝茶 tous les jours.", "fr",
     [[("fr", "J'aime le thé"), ("zh", "我喜欢喝茶"), ("fr", "tous les jours.")]]),
    # Devanagari, with the danda ending sentences (made a period for espeak)
    ("मेरा नाम राम है। आज 25 तारीख है।", "hi",
     [[("hi", "मेरा नाम राम है.")], [("hi", "आज 25 तारीख है.")]]),
    ("मुझे iPhone पसंद है।", "hi", [[("hi", "मुझे iPhone पसंद है.")]]),
    # Japanese: kana and kanji are one Japanese run, its own punctuation kept
    ("今日は。３人で行きました！", "ja", [[("ja", "今日は。")], [("ja", "３人で行きました！")]]),
])
def test_text_is_read_in_the_voices_language(text, language, expected):
    assert runs(text, language) == expected


def test_the_same_text_with_an_english_voice_is_english():
    assert runs("Il y a 42 personnes.", None) == [[("en", "Il y a forty-two personnes.")]]


@pytest.mark.parametrize("text, language, voice, found", [
    ("こんにちは", "es", "ef_dora", "Japanese Hiragana: こ ん に ち は"),
    ("Привет, мир", "fr", "ff_siwis", "Cyrillic: П р и в е т м"),
    ("नमस्ते", "pt-br", "pf_dora", "Devanagari: न म स त"),
    ("iPhoneを買った。", "ja", "jf_alpha", "Latin: i P h o n e"),
    ("안녕하세요", "hi", "hf_alpha", "Korean Hangul"),
])
def test_letters_the_voice_cannot_read_are_refused(text, language, voice, found):
    with pytest.raises(TextError) as err:
        plan_text(text, 500, language, voice)
    message = str(err.value)
    name, name_zh = {"es": ("Spanish", "西班牙语"), "fr": ("French", "法语"),
                     "pt-br": ("Brazilian Portuguese", "巴西葡萄牙语"),
                     "ja": ("Japanese", "日语"), "hi": ("Hindi", "印地语")}[language]
    assert f"Voice {voice} speaks {name}" in message and found in message
    assert f"音色 {voice} 说{name_zh}" in message


def test_an_english_voice_names_what_it_reads():
    with pytest.raises(TextError) as err:
        plan_text("नमस्ते", 500, None, "af_heart")
    message = str(err.value)
    assert "Voice af_heart reads English and Mandarin" in message
    assert "Devanagari" in message and "音色 af_heart 只能朗读英语和中文" in message
