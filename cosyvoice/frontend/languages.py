"""The languages a voice may read besides English and Mandarin, and their text checks.

A voice of one of these languages (Kokoro's Spanish, French, Italian, Brazilian Portuguese,
Hindi and Japanese voices) reads its sentences in that language: Latin-script text spoken
by the French voice is French. Each language accepts the scripts it is written in, plus
Chinese characters where a Mandarin run inside its sentence is read by a Mandarin voice
(as in an English voice's sentence); Japanese reads kanji as Japanese. Letters of any
other script are refused up front with a message (English + Chinese) that names the
voice's language.

Numbers are left to the language's G2P: espeak-ng reads digits in Spanish, French,
Italian, Portuguese and Hindi itself, and misaki's Japanese G2P in Japanese, so the
English normalizer never spells them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cosyvoice.errors import TextError
from cosyvoice.frontend.text_checks import describe_letters, unsupported_letters


@dataclass(frozen=True)
class Language:
    """A language a voice may speak: its names and the scripts its text may use (as
    :func:`~cosyvoice.frontend.text_checks.script_of` names them)."""

    code: str
    name: str
    name_zh: str
    scripts: frozenset[str]


_LATIN_HAN = frozenset({"latin", "cjk"})
LANGUAGES = {lang.code: lang for lang in (
    Language("es", "Spanish", "西班牙语", _LATIN_HAN),
    Language("fr", "French", "法语", _LATIN_HAN),
    Language("it", "Italian", "意大利语", _LATIN_HAN),
    Language("pt-br", "Brazilian Portuguese", "巴西葡萄牙语", _LATIN_HAN),
    # Hindi text often mixes in English words; espeak-ng's Hindi voice reads them
    Language("hi", "Hindi", "印地语", frozenset({"DEVANAGARI", "latin", "cjk"})),
    # no Latin: misaki's Japanese G2P passes Latin letters through unread
    Language("ja", "Japanese", "日语",
             frozenset({"cjk", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "IDEOGRAPHIC"})),
)}


def check_language_script(text: str, language: str, voice: str) -> None:
    """``TextError`` (English + Chinese) when ``text`` has letters that ``voice``, which
    speaks ``language``, cannot read — naming the language, the scripts and letters."""
    lang = LANGUAGES[language]
    foreign = unsupported_letters(text, allowed=lang.scripts)
    if not foreign:
        return
    found = describe_letters(foreign)
    hint = (" (write Latin-script words in katakana)" if language == "ja"
            and "Latin" in foreign else "")
    raise TextError(
        f"Voice {voice} speaks {lang.name}; the text has letters it cannot read ({found})"
        f"{hint} — remove them or choose a voice of their language / 音色 {voice} 说"
        f"{lang.name_zh}，无法朗读文本中的这些字符（{found}），请删除或换用相应语言的音色")
