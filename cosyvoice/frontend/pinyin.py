"""The Baker phone set and pinyin → (initial, final) in it: what the Mandarin G2P
(:mod:`cosyvoice.frontend.zh_g2p`) writes and what a pinyin reading in the user lexicon or
an inline ``{字|zi4}`` (:mod:`cosyvoice.frontend.pronunciation`) is checked against."""

from __future__ import annotations

from functools import lru_cache

# ---------------------------------------------------------------------------------------
# Symbol set (the order of baker_mapper.json's ids)
# ---------------------------------------------------------------------------------------

INITIALS = ("^ b c ch d f g h j k l m n p q r s sh t x z zh").split()
FINALS = (
    "a ai an ang ao e ei en eng er i ia ian iang iao ie ii iii in ing iong iou o ong ou "
    "u ua uai uan uang uei uen ueng uo v van ve vn"
).split()
BREAKS = ("sil", "#0", "#1", "#2", "#3")
SYMBOLS: tuple[str, ...] = (
    ("pad", *BREAKS, *INITIALS) + tuple(f + t for f in FINALS for t in "12345") + ("eos",)
)

# ---------------------------------------------------------------------------------------
# Pinyin → initial + final
# ---------------------------------------------------------------------------------------

_PINYIN_INITIALS = ("zh", "ch", "sh", "b", "p", "m", "f", "d", "t", "n", "l", "g", "k",
                    "h", "j", "q", "x", "r", "z", "c", "s")
_Y_W = {
    "yi": "i", "ya": "ia", "yan": "ian", "yang": "iang", "yao": "iao", "ye": "ie",
    "yin": "in", "ying": "ing", "yo": "iou", "yong": "iong", "you": "iou", "yu": "v",
    "yuan": "van", "yue": "ve", "yun": "vn", "wu": "u", "wa": "ua", "wai": "uai",
    "wan": "uan", "wang": "uang", "wei": "uei", "wen": "uen", "weng": "ueng", "wo": "uo",
}
_SYLLABIC_NASALS = {"n", "ng", "m", "hm", "hng"}  # 嗯 呣 哼: the corpus has no phone; ^ en


@lru_cache(maxsize=2048)
def split_pinyin(syllable: str) -> tuple[str, str]:
    """Toneless pinyin → (initial, final) in the Baker phone set: "zhi" → ("zh", "iii").

    Raises ``ValueError`` for a syllable the phone set cannot express.
    """
    s = syllable.replace("ü", "v").replace("ê", "e")
    if s in _SYLLABIC_NASALS:
        return "^", "en"
    if s in _Y_W:
        return "^", _Y_W[s]
    initial = next((i for i in _PINYIN_INITIALS if s.startswith(i) and len(s) > len(i)), "^")
    final = s[len(initial):] if initial != "^" else s
    if initial in ("j", "q", "x") and final.startswith("u"):
        final = "v" + final[1:]
    if initial in ("l", "n") and final == "ue":
        final = "ve"
    if final == "i" and initial in ("z", "c", "s"):
        final = "ii"
    elif final == "i" and initial in ("zh", "ch", "sh", "r"):
        final = "iii"
    final = {"iu": "iou", "ui": "uei", "un": "uen", "vn": "vn"}.get(final, final)
    if final not in FINALS:
        raise ValueError(f"pinyin {syllable!r} has no phones in the Baker set")
    return initial, final
