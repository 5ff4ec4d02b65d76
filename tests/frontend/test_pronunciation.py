"""Pronunciation overrides: syntax, errors, and the G2P outputs they change (golden)."""

import pytest

from cosyvoice.errors import TextError
from cosyvoice.frontend.plan import plan_text
from cosyvoice.frontend.pronunciation import (
    arpabet_to_ipa,
    cosyvoice3_phones,
    parse_reading,
    split_at_readings,
    tone_marked,
)
from cosyvoice.frontend.zh_g2p import zh_to_phones
from cosyvoice.runtime.text_tokens import COSYVOICE3_SPECIALS


def pinyin(text, readings=None):
    return " ".join(s.pinyin for s in zh_to_phones(text, readings=readings).syllables)


def lexicon(**entries):
    return {w.lower(): parse_reading(w, r, "lexicon") for w, r in entries.items()}


def test_pinyin_with_numbers_or_marks_is_one_reading():
    assert parse_reading("重要", "zhong4 yao4").phones == ("zhong4", "yao4")
    assert parse_reading("重要", "zhòng yào").phones == ("zhong4", "yao4")
    assert parse_reading("绿", "lü4").phones == ("lv4",)
    assert parse_reading("朋友", "péng you").phones == ("peng2", "you5")  # unmarked: neutral
    assert parse_reading("tomato", "t ah0 m ey1 t ow2").phones == (
        "T", "AH0", "M", "EY1", "T", "OW2")


@pytest.mark.parametrize("text, quoted", [
    ("这很{重要|zhong yao}。", "{重要|zhong yao}"),
    ("这很{重要|zhong4}。", "{重要|zhong4}"),
    ("这很{重要|zhong4 yoa4}。", "{重要|zhong4 yoa4}"),
    ("A {tomato|T AH0 Q}.", "{tomato|T AH0 Q}"),
    ("A {tomato|T M}.", "{tomato|T M}"),
    ("A {tomato}.", "{tomato}"),
    ("A {tomato|T AH0|M}.", "{tomato|T AH0|M}"),
    ("A tomato|T AH0} here.", "}"),
])
def test_a_malformed_override_is_an_error_quoting_it(text, quoted):
    with pytest.raises(TextError) as e:
        plan_text(text, 500)
    assert quoted in str(e.value)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in str(e.value))  # and in Chinese


def test_an_override_the_normalizer_rewrites_is_an_error_not_dropped():
    with pytest.raises(TextError, match="cannot be applied"):
        plan_text("I have 3 {kg|K EY1 JH IY1} of rice.", 500)


def test_the_override_word_stays_in_the_text_and_its_reading_rides_on_the_run():
    [s] = plan_text("这很{重要|zhong4 yao4}。", 500)
    assert s.text == "这很重要。"
    assert s.runs[0].readings["重要"].phones == ("zhong4", "yao4")


def test_inline_override_beats_the_lexicon_and_lexicon_fills_the_rest():
    lex = lexicon(重要="chong2 yao4", 朝阳="chao2 yang2")
    [s] = plan_text("朝阳很{重要|zhong4 yao4}。", 500, lexicon=lex)
    r = s.runs[0].readings
    assert r["重要"].source == "inline" and r["朝阳"].source == "lexicon"


# ---- golden: the G2P output changes as the lexicon says ------------------------------

@pytest.mark.parametrize("text, entries, before, after", [
    ("朝阳公园很大。", {"朝阳": "chao2 yang2"},
     "zhao1 yang2 gong1 yuan2 hen3 da4", "chao2 yang2 gong1 yuan2 hen3 da4"),
    ("我们重新开始。", {"重新": "zhong4 xin1"},
     "wo3 men5 chong2 xin1 kai1 shi3", "wo3 men5 zhong4 xin1 kai1 shi3"),
    ("这很重要。", {"重要": "chong2 yao4"}, "zhe4 hen3 zhong4 yao4", "zhe4 hen3 chong2 yao4"),
    ("他在银行工作。", {"行": "xing2"},
     "ta1 zai4 yin2 hang2 gong1 zuo4", "ta1 zai4 yin2 xing2 gong1 zuo4"),
    ("一行人走了。", {"一行": "yi1 hang2"},
     "yi4 xing2 ren2 zou3 le5", "yi1 hang2 ren2 zou3 le5"),
    ("他长大了。", {"长大": "chang2 da4"}, "ta1 zhang3 da4 le5", "ta1 chang2 da4 le5"),
    ("这条路很长。", {"长": "zhang3"}, "zhe4 tiao2 lu4 hen3 chang2", "zhe4 tiao2 lu4 hen2 zhang3"),
    ("薄荷很香。", {"薄荷": "bo4 he5"}, "bo4 he2 hen3 xiang1", "bo4 he5 hen3 xiang1"),
])
def test_lexicon_fixes_polyphones(text, entries, before, after):
    [s] = plan_text(text, 500, lexicon=lexicon(**entries))
    assert pinyin(text) == before
    assert pinyin(s.runs[0].text, s.runs[0].readings) == after


def test_an_override_is_spoken_as_given_no_sandhi():
    assert pinyin("你好。") == "ni2 hao3"
    assert pinyin("你好。", lexicon(你好="ni3 hao3")) == "ni3 hao3"


def test_baker_phones_of_an_override():
    zh = zh_to_phones("很重要。", readings=lexicon(重要="chong2 yao4"))
    assert zh.phones == ["sil", "h", "en3", "#0", "ch", "ong2", "#0", "^", "iao4",
                         "sil", "eos"]


# ---- English and the engines' forms -------------------------------------------------

def test_english_names_read_as_given():
    lex = lexicon(Nguyen="W IH1 N")
    [s] = plan_text("Ask nguyen today.", 500, lexicon=lex)
    pieces = split_at_readings(s.runs[0].text, s.runs[0].readings.values())
    assert pieces[0] == "Ask " and pieces[1].phones == ("W", "IH1", "N")
    assert arpabet_to_ipa(pieces[1].phones) == "wˈɪn"
    assert arpabet_to_ipa(("T", "AH0", "M", "EY1", "T", "OW2")) == "təmˈeɪtˌoʊ"


def test_english_words_match_whole_words_only():
    pieces = split_at_readings("Anna and Annabel", lexicon(Anna="AA1 N AH0").values())
    assert [p if isinstance(p, str) else p.word for p in pieces] == ["Anna", " and Annabel"]


def test_cosyvoice3_phone_tokens_are_in_its_vocabulary():
    known = set(COSYVOICE3_SPECIALS)
    for word, reading, tokens in [
        ("重要", "zhong4 yao4", "[zh][òng][y][ào]"), ("绿", "lv4", "[l][ǜ]"),
        ("略", "lve4", "[l][vè]"), ("朋友", "peng2 you5", "[p][éng][y][ou]"),
        ("tomato", "T AH0 M EY1 T OW2", "[T][AH0][M][EY1][T][OW2]"),
    ]:
        phones = cosyvoice3_phones(parse_reading(word, reading))
        assert "".join(phones) == tokens
        assert set(phones) <= known


def test_tone_marks_follow_the_placement_rule():
    assert [tone_marked(s) for s in ("hao3", "liu2", "gui4", "lve4", "ma5", "zhou1")] == [
        "hǎo", "liú", "guì", "lüè", "ma", "zhōu"]
