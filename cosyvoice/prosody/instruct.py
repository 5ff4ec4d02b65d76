"""Natural-language instructions (Chinese and English) → style parameters.

    ins = parse_instruction("speak happily and a bit faster")
    ins.emotion, ins.speed              # "happy", 1.15
    parse_instruction("用四川话说这句话").dialect          # "sichuan"
    parse_instruction("语速 1.5 倍，小声一点").volume      # 0.75 (−2.5 dB)

The parser is a set of patterns, each of which consumes a span of the instruction and sets
one field (emotion with its intensity, speed, volume, pitch, dialect). What no pattern
consumes is split into pieces; filler words ("请", "用", "地", "说", "please", "speak",
"voice" ...) are dropped and every remaining piece is reported in ``unknown`` so the user
sees it ("not understood: …" / "未能理解：…"), never silently ignored. CosyVoice3's own
instruct form ("You are a helpful assistant. 请用四川话表达。<|endofprompt|>") is accepted:
the boilerplate is stripped first.

Units: ``speed`` and ``volume`` are multipliers (1.0 = unchanged; volume is an amplitude
gain), ``pitch`` is in semitones, ``intensity`` scales the emotion (0.5 "a bit", 1 plain,
1.5 "very"). Values are clamped to the ranges below, with a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SPEED_RANGE = (0.5, 2.0)  # the pipeline's speed range (pipeline.SPEED_RANGE; a test checks)
VOLUME_RANGE = (0.25, 4.0)  # amplitude gain, ±12 dB
PITCH_RANGE = (-12.0, 12.0)  # semitones
SPEED_STEP = 0.3  # "faster": ×1.3 per unit of intensity ("a bit" 0.5, "much" 1.5)
VOLUME_STEP_DB = 5.0  # "louder": +5 dB per unit of intensity
PITCH_STEP_ST = 3.0  # "higher": +3 semitones per unit of intensity

# Canonical dialect keys (shared with cosyvoice.prosody.dialects).
DIALECTS = ("sichuan", "chongqing", "dongbei", "tianjin", "jinan", "zhengzhou", "xian",
            "lanzhou", "yinchuan", "taiyuan", "kunming", "guiyang", "wuhan", "changsha",
            "nanchang", "cantonese", "shanghainese", "minnan", "hakka")
# Place names that take a suffix (话 / 方言 / 口音 / 腔): "四川话", "四川口音", "川味".
_DIALECT_PLACES = {
    "四川": "sichuan", "川": "sichuan", "成都": "sichuan", "重庆": "chongqing",
    "东北": "dongbei", "天津": "tianjin", "山东": "jinan", "济南": "jinan",
    "河南": "zhengzhou", "郑州": "zhengzhou", "陕西": "xian", "西安": "xian",
    "甘肃": "lanzhou", "兰州": "lanzhou", "宁夏": "yinchuan", "银川": "yinchuan",
    "山西": "taiyuan", "太原": "taiyuan", "云南": "kunming", "昆明": "kunming",
    "贵州": "guiyang", "贵阳": "guiyang", "湖北": "wuhan", "武汉": "wuhan",
    "湖南": "changsha", "长沙": "changsha", "江西": "nanchang", "南昌": "nanchang",
    "广东": "cantonese", "广州": "cantonese", "香港": "cantonese", "上海": "shanghainese",
    "闽南": "minnan", "福建": "minnan", "台湾": "minnan", "客家": "hakka",
}
# Whole names (no suffix needed), Chinese and English.
_DIALECT_NAMES = {
    "粤语": "cantonese", "广府话": "cantonese", "白话": "cantonese", "沪语": "shanghainese",
    "吴语": "shanghainese", "闽南语": "minnan", "台语": "minnan", "河洛话": "minnan",
    "客家话": "hakka", "客语": "hakka",
    "sichuanese": "sichuan", "sichuan": "sichuan", "szechuan": "sichuan",
    "chongqing": "chongqing", "dongbei": "dongbei", "northeastern": "dongbei",
    "northeast": "dongbei", "tianjin": "tianjin", "shandong": "jinan", "jinan": "jinan",
    "henan": "zhengzhou", "zhengzhou": "zhengzhou", "shaanxi": "xian", "xi'an": "xian",
    "xian": "xian", "gansu": "lanzhou", "lanzhou": "lanzhou", "ningxia": "yinchuan",
    "yinchuan": "yinchuan", "shanxi": "taiyuan", "taiyuan": "taiyuan", "yunnan": "kunming",
    "kunming": "kunming", "guizhou": "guiyang", "guiyang": "guiyang", "hubei": "wuhan",
    "wuhan": "wuhan", "hunan": "changsha", "changsha": "changsha", "jiangxi": "nanchang",
    "nanchang": "nanchang", "cantonese": "cantonese", "yue": "cantonese",
    "shanghainese": "shanghainese", "shanghai": "shanghainese", "wu": "shanghainese",
    "minnan": "minnan", "hokkien": "minnan", "taiwanese": "minnan", "hakka": "hakka",
}
_MANDARIN = ("普通话", "标准普通话", "官话", "mandarin", "standard chinese", "putonghua")

EMOTIONS = {
    "happy": ("开心", "高兴", "快乐", "愉快", "欢快", "喜悦", "愉悦", "欢乐", "欢喜",
              "happily", "happy", "cheerfully", "cheerful", "joyfully", "joyful", "gladly",
              "glad", "joyous"),
    "sad": ("悲伤", "难过", "伤心", "忧伤", "悲痛", "哀伤", "沮丧", "悲哀", "失落", "sadly",
            "sad", "sorrowfully", "sorrowful", "unhappily", "unhappy", "melancholy",
            "mournfully", "depressed", "gloomy"),
    "angry": ("生气", "愤怒", "恼火", "气愤", "发火", "暴躁", "愤慨", "angrily", "angry",
              "furiously", "furious", "mad", "annoyed", "irritated", "enraged"),
    "surprised": ("惊讶", "吃惊", "惊奇", "震惊", "诧异", "惊喜", "surprisedly", "surprised",
                  "in surprise", "amazed", "astonished", "shocked"),
    "fearful": ("害怕", "恐惧", "惊恐", "胆怯", "恐慌", "fearfully", "fearful", "scared",
                "afraid", "frightened", "terrified", "in fear", "nervously", "nervous"),
    "disgusted": ("厌恶", "嫌弃", "恶心", "反感", "讨厌", "鄙视", "disgustedly", "disgusted",
                  "in disgust", "with disgust", "contemptuously", "contemptuous"),
    "calm": ("平静", "冷静", "淡定", "平和", "沉着", "安静", "calmly", "calm", "peacefully",
             "peaceful", "relaxed"),
    "gentle": ("温柔", "柔和", "轻柔", "温和", "亲切", "gently", "gentle", "tenderly",
               "tender", "warmly", "kindly", "sweetly"),
    "excited": ("兴奋", "激动", "热情", "激昂", "亢奋", "excitedly", "excited",
                "enthusiastically", "enthusiastic", "thrilled", "energetically", "energetic"),
    "serious": ("严肃", "认真", "郑重", "庄重", "严厉", "seriously", "serious", "solemnly",
                "solemn", "sternly", "stern", "formally", "formal"),
}

# Intensity words: a modifier right before a word scales its effect.
_STRONG = ("非常", "特别", "十分", "极其", "超级", "超", "很", "好", "太", "极", "更加", "更",
           "多", "very", "really", "extremely", "super", "so", "much", "a lot", "way",
           "quite", "even")
_WEAK = ("稍微", "稍稍", "略微", "有点儿", "有点", "有些", "略", "稍", "a little bit",
         "a little", "a bit", "a tad", "slightly", "somewhat", "kind of", "a touch")
_TAIL_WEAK = ("一点儿", "一点", "一些", "点儿", "点", "些")  # "快一点", "小声些"

FILLERS_ZH = ("请你", "请", "用", "以", "地", "得", "的", "说话", "说", "读出来", "朗读", "读",
              "念", "讲", "表达", "来", "这句话", "这段话", "这段文字", "一句话", "一句",
              "这句", "句话", "还是", "或者",
              "一下", "语气", "语调", "声音", "嗓音", "口吻", "情绪", "感情", "心情", "带着",
              "带", "着", "充满", "和", "并且", "而且", "同时", "又", "再", "要", "把", "你",
              "是", "一种", "一个", "的方式", "方式", "风格", "样子", "感觉", "语速", "音量",
              "音调", "音高", "调", "一点儿", "一点", "一些", "点", "些", "稍微", "有点",
              "很", "非常", "特别", "然后", "可以", "吗", "吧", "呢", "啊", "哦")
FILLERS_EN = frozenset((
    "please", "neutral", "neutrally", "speak", "say", "read", "talk", "tell", "it", "this",
    "that", "these", "those",
    "sentence", "sentences", "text", "line", "words", "in", "a", "an", "the", "with", "and",
    "but", "also", "voice", "tone", "way", "manner", "style", "like", "sound", "sounding",
    "be", "more", "bit", "little", "you", "are", "is", "helpful", "assistant", "me", "to",
    "of", "for", "using", "use", "accent", "dialect", "mood", "emotion", "make", "your", "my",
    "just", "kind", "sort", "speech", "speaking", "spoken", "aloud", "out",
    "slightly", "very", "really", "somewhat", "rather", "pace", "speed", "rate", "volume",
    "pitch", "then", "now", "while", "at", "as", "if", "do", "can", "could", "would",
    "should", "i", "want", "try", "tempo", "level", "up", "down", "than", "usual",
    "normal", "keep", "yet", "too", "quite", "so", "much", "even", "way",
))

_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9, "十": 10, "半": 0.5}
_NUM = r"(\d+(?:\.\d+)?|[零一二两三四五六七八九十半]+(?:点[零一二三四五六七八九])?)"
_BOILERPLATE = re.compile(r"you are a helpful assistant[.。!！]?|<\|[^|>]*\|>", re.I)


@dataclass
class Instruction:
    """A parsed instruction. ``understood`` lists what was applied, ``unknown`` what was not
    understood, ``notes`` clamps and contradictions (all for the user's status line)."""

    emotion: str | None = None
    intensity: float = 1.0
    speed: float = 1.0
    volume: float = 1.0
    pitch: float = 0.0
    dialect: str | None = None
    understood: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def is_neutral(self) -> bool:
        return (self.emotion is None and self.dialect is None and self.speed == 1.0
                and self.volume == 1.0 and self.pitch == 0.0)

    def messages(self) -> list[str]:
        """Lines for the result notes: what was understood, what was not, and why."""
        out = []
        if self.understood:
            out.append("instruction understood: " + ", ".join(self.understood))
        if self.unknown:
            words = "、".join(self.unknown)
            out.append(f"not understood: {', '.join(self.unknown)} / 未能理解：{words}")
        return out + self.notes


# ---- patterns ---------------------------------------------------------------------------
def _alt(words) -> str:
    """Regex alternation, longest first, English words guarded against partial matches."""
    parts = []
    for w in sorted(set(words), key=len, reverse=True):
        esc = re.escape(w).replace(r"\ ", r"\s+")
        parts.append(rf"(?<![a-z']){esc}(?![a-z])" if re.match(r"[a-z]", w) else esc)
    return "(?:" + "|".join(parts) + ")"


_MOD = rf"(?:(?P<mod>{_alt(_STRONG + _WEAK)})\s*)?"
_TAIL = rf"(?:\s*(?P<tail>{_alt(_TAIL_WEAK)}))?"


def _intensity(mod: str | None, tail: str | None = None) -> float:
    if mod:
        mod = re.sub(r"\s+", " ", mod)
        return 0.5 if mod in _WEAK else 1.5
    return 0.5 if tail else 1.0


def _number(text: str) -> float | None:
    """"1.5" or Chinese numerals ("两", "一点五", "十二") → float."""
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    whole, _, frac = text.partition("点")
    value = 0.0
    if "十" in whole:
        tens, _, ones = whole.partition("十")
        value = 10 * (_CN_DIGITS.get(tens, 1) if tens else 1) + (_CN_DIGITS.get(ones, 0)
                                                                   if ones else 0)
    elif whole:
        digits = [_CN_DIGITS.get(c) for c in whole]
        if None in digits:
            return None
        value = float(sum(digits)) if len(digits) == 1 else float("".join(
            str(int(d)) for d in digits))
    if frac:
        d = _CN_DIGITS.get(frac)
        value += 0.1 * d if d is not None else 0.0
    return value


@dataclass
class _Rule:
    kind: str  # emotion | speed | volume | pitch | dialect | mandarin
    value: object  # emotion name, +1/-1 direction, "abs", dialect key
    regex: re.Pattern


def _rules() -> list[_Rule]:
    rules: list[_Rule] = []

    def add(kind, value, pattern):
        rules.append(_Rule(kind, value, re.compile(pattern, re.I)))

    # Absolute values first: they carry numbers.
    add("speed", "abs", rf"(?:语速|速度|语速调?到|速度调?到)\s*(?:调到|设为|设成|为|是|调成)?\s*"
        rf"{_NUM}\s*(?:倍速?|x|×)?")
    add("speed", "abs", rf"{_NUM}\s*倍(?:的)?(?:语速|速度|速)")
    add("speed", "abs", r"(?<![a-z])(?:speed|rate|tempo|pace)\s*(?:of|=|:|to|at)?\s*[x×]?"
        r"(\d+(?:\.\d+)?)\s*(?:x|×|times)?(?![a-z])")
    add("speed", "abs", r"(?<![a-z\d.])[x×]?(\d+(?:\.\d+)?)\s*(?:x|×|times)\s*(?:the\s+)?"
        r"(?:speed|rate|tempo|pace)")
    add("volume", "abs", rf"(?:音量|响度)\s*(?:调到|设为|设成|为|是|调成|放大)?\s*{_NUM}\s*"
        r"(?:倍|x|×)?")
    add("volume", "abs", r"(?<![a-z])(?:volume|gain|loudness)\s*(?:of|=|:|to|at)?\s*[x×]?"
        r"(\d+(?:\.\d+)?)\s*(?:x|×|times)?(?![a-z])")
    add("pitch", "abs", rf"(?:升高|提高|调高|升|高)\s*{_NUM}\s*个?半音")
    add("pitch", "neg", rf"(?:降低|调低|降|低)\s*{_NUM}\s*个?半音")
    add("pitch", "abs", r"(?<![a-z])(?:pitch|f0)\s*(?:shift)?\s*(?:of|=|:|by|to)?\s*"
        r"([+-]?\d+(?:\.\d+)?)\s*(?:st|semitones?)?(?![a-z])")
    add("pitch", "abs", r"(?<![a-z])(?:pitch\s+)?up\s+(\d+(?:\.\d+)?)\s*(?:st|semitones?)")
    add("pitch", "neg", r"(?<![a-z])(?:pitch\s+)?down\s+(\d+(?:\.\d+)?)\s*(?:st|semitones?)")
    add("pitch", "abs", r"(\d+(?:\.\d+)?)\s*(?:st|semitones?)\s+(?:higher|up)")
    add("pitch", "neg", r"(\d+(?:\.\d+)?)\s*(?:st|semitones?)\s+(?:lower|down)")
    # Dialects and Mandarin.
    add("mandarin", None, _alt(_MANDARIN))
    for name, key in _DIALECT_NAMES.items():
        suffix = r"(?:\s+(?:dialect|accent|chinese))?" if name.isascii() else ""
        add("dialect", key, _alt([name]) + suffix)
    add("dialect", None, "(?P<place>" + _alt(_DIALECT_PLACES) +
        r")(?:话|方言|口音|腔调|腔|味儿|味)")
    # Emotions before the speed words (快 is inside 快乐 and 愉快).
    for emo, words in EMOTIONS.items():
        add("emotion", emo, _MOD + _alt(words) + r"(?:\s+(?:tone|voice|mood))?" + _TAIL)
    # Volume words before pitch words (低声 is quiet; 高声 is loud).
    loud = ("大声", "高声", "响亮", "洪亮", "大嗓门", "louder", "loudly", "loud", "shouting",
            "shout", "loud voice")
    quiet = ("小声", "轻声", "低声", "悄悄", "耳语", "轻轻", "quieter", "quietly", "quiet",
             "softer", "softly", "soft", "whispering", "whisper", "in a whisper")
    add("volume", +1, _MOD + _alt(loud) + _TAIL)
    add("volume", -1, _MOD + _alt(quiet) + _TAIL)
    add("volume", +1, r"(?:声音|音量)\s*" + _MOD + r"(?:再)?(?:大|响|放大|调大|加大)" + _TAIL)
    add("volume", -1, r"(?:声音|音量)\s*" + _MOD + r"(?:再)?(?:调小|减小|小|轻)" + _TAIL)
    add("volume", -1, r"音量\s*" + _MOD + r"(?:降低|调低)" + _TAIL)
    add("volume", +1, r"(?:(?P<mod>增大|提高|加大|调大|放大)音量)")
    add("volume", -1, r"(?:(?P<mod>减小|降低|调小)音量)")
    add("volume", +1, _MOD + r"(?:raise|increase|turn\s+up)\s+(?:the\s+)?volume")
    add("volume", -1, _MOD + r"(?:lower|decrease|reduce|turn\s+down)\s+(?:the\s+)?volume")
    # Pitch words.
    high = ("高音", "尖细", "尖声", "尖", "higher pitch", "higher-pitched", "high-pitched",
            "high pitched", "high pitch", "higher voice", "high voice", "higher", "high")
    low = ("低沉", "浑厚", "深沉", "低音", "粗", "lower pitch", "lower-pitched", "low-pitched",
           "low pitched", "low pitch", "deeper voice", "deep voice", "deeper", "deep", "lower",
           "low")
    add("pitch", +1, r"(?:提高|升高|调高)(?:音调|音高|声调)")
    add("pitch", -1, r"(?:降低|调低)(?:音调|音高|声调)")
    add("pitch", +1, r"(?:音调|音高|声调|声音|嗓音)\s*" + _MOD + r"(?:再)?(?:升高|尖细|高|尖)"
        + _TAIL)
    add("pitch", -1, r"(?:音调|音高|声调|声音|嗓音)\s*" + _MOD + r"(?:再)?(?:降低|低沉|深沉|低|沉)"
        + _TAIL)
    add("pitch", +1, _MOD + _alt(high) + _TAIL)
    add("pitch", -1, _MOD + _alt(low) + _TAIL)
    add("pitch", +1, _MOD + r"(?:raise|increase)\s+(?:the\s+)?pitch")
    add("pitch", -1, _MOD + r"(?:lower|decrease|drop)\s+(?:the\s+)?pitch")
    # Speed words.
    fast = ("加快", "快速", "快", "急促", "faster", "quicker", "quickly", "fast", "quick",
            "speed up", "hurried", "hurriedly", "rapidly", "rapid")
    slow = ("放慢", "缓慢", "慢", "slower", "slowly", "slow", "slow down", "leisurely")
    add("speed", +1, r"(?:语速|速度)\s*" + _MOD + r"(?:再)?(?:快|加快)" + _TAIL)
    add("speed", -1, r"(?:语速|速度)\s*" + _MOD + r"(?:再)?(?:慢|放慢)" + _TAIL)
    add("speed", +1, _MOD + _alt(fast) + _TAIL)
    add("speed", -1, _MOD + _alt(slow) + _TAIL)
    return rules


_RULES = _rules()


# ---- parsing ----------------------------------------------------------------------------
@dataclass
class _Found:
    """Matches by kind; each item ends with ``(position, matched text)``."""

    emotions: list[tuple] = field(default_factory=list)  # (emotion, level, (pos, text))
    dialects: list[tuple] = field(default_factory=list)  # (key | None, (pos, text))
    speed: list[tuple] = field(default_factory=list)  # ("abs" | "rel", value, (pos, text))
    volume: list[tuple] = field(default_factory=list)
    pitch: list[tuple] = field(default_factory=list)

    def in_order(self) -> None:
        """Sort every list by where its match starts in the instruction."""
        for name in ("emotions", "dialects", "speed", "volume", "pitch"):
            items = getattr(self, name)
            items.sort(key=lambda item: item[-1][0])
            setattr(self, name, [(*item[:-1], item[-1][1]) for item in items])


def parse_instruction(text: str) -> Instruction:
    """Free-form Chinese / English instruction → :class:`Instruction` (never raises on
    content: what cannot be read lands in ``unknown``)."""
    s = _BOILERPLATE.sub(" ", text or "").lower()
    s = s.replace("（", "(").replace("）", ")")
    found = _Found()
    for rule in _RULES:
        s = rule.regex.sub(lambda m, r=rule: _consume(r, m, found), s)
    found.in_order()
    ins = Instruction()
    _resolve_emotion(found, ins)
    _resolve_dialect(found, ins)
    ins.speed = _resolve_scale("speed", found.speed, ins, _speed_rel, SPEED_RANGE, "×")
    ins.volume = _resolve_scale("volume", found.volume, ins, _volume_rel, VOLUME_RANGE, "×")
    ins.pitch = _resolve_scale("pitch", found.pitch, ins, _pitch_rel, PITCH_RANGE, " st")
    ins.unknown = _leftovers(s)
    return ins


def _consume(rule: _Rule, m: re.Match, found: _Found) -> str:
    """Record one match (with its position) and blank it out so it is not parsed twice."""
    text = (m.start(), m.group(0).strip())
    groups = m.groupdict()
    level = _intensity(groups.get("mod"), groups.get("tail"))
    if rule.kind == "emotion":
        found.emotions.append((str(rule.value), level, text))
    elif rule.kind == "mandarin":
        found.dialects.append((None, text))
    elif rule.kind == "dialect":
        key = rule.value if rule.value else _DIALECT_PLACES[groups["place"]]
        found.dialects.append((str(key), text))
    else:
        number = next((g for g in m.groups() if g and re.search(r"\d|[一二两三四五六七八九十半]", g)
                       and g not in (groups.get("mod"), groups.get("tail"))), None)
        target = getattr(found, rule.kind)
        if rule.value in ("abs", "neg") and number is not None:
            value = _number(number.lstrip("+-"))
            if value is None:
                return m.group(0)
            if number.startswith("-"):
                value = -value
            target.append(("abs", -value if rule.value == "neg" else value, text))
        else:
            target.append(("rel", float(rule.value) * level, text))
    return "|" + " " * (len(m.group(0)) - 1)  # same length: later positions stay valid


def _resolve_emotion(found: _Found, ins: Instruction) -> None:
    if not found.emotions:
        return
    names = list(dict.fromkeys(e for e, _, _ in found.emotions))
    emo, level, text = found.emotions[0]
    ins.emotion, ins.intensity = emo, level
    label = f"{emo} ({text})" if level == 1.0 else f"{emo} ×{level:g} ({text})"
    ins.understood.append(label)
    if len(names) > 1:
        ins.notes.append(f"several emotions asked ({', '.join(names)}); using {emo} / "
                         f"指令包含多种情绪，使用 {emo}")


def _resolve_dialect(found: _Found, ins: Instruction) -> None:
    if not found.dialects:
        return
    keys = list(dict.fromkeys(k for k, _ in found.dialects))
    key, text = found.dialects[0]
    ins.dialect = key
    ins.understood.append(f"dialect {key} ({text})" if key else f"standard Mandarin ({text})")
    if len(keys) > 1:
        names = ", ".join(k or "mandarin" for k in keys)
        ins.notes.append(f"several dialects asked ({names}); using {key or 'mandarin'} / "
                         f"指令包含多种方言，使用第一个")


def _speed_rel(level: float) -> float:
    return 1.0 + SPEED_STEP * level if level > 0 else 1.0 / (1.0 - SPEED_STEP * level)


def _volume_rel(level: float) -> float:
    return 10 ** (VOLUME_STEP_DB * level / 20)


def _pitch_rel(level: float) -> float:
    return PITCH_STEP_ST * level


def _resolve_scale(name: str, items: list[tuple[str, float, str]], ins: Instruction,
                   relative, bounds: tuple[float, float], unit: str) -> float:
    """One of speed/volume/pitch: an absolute value wins over relative words; opposite
    relative words cancel with a note; the result is clamped with a note."""
    neutral = 0.0 if name == "pitch" else 1.0
    if not items:
        return neutral
    absolute = [v for k, v, _ in items if k == "abs"]
    rel = [v for k, v, _ in items if k == "rel"]
    words = ", ".join(t for _, _, t in items)
    if rel and min(rel) < 0 < max(rel):
        ins.notes.append(f"contradictory {name} words ({words}): {name} left unchanged / "
                         f"指令自相矛盾，{_ZH_NAME[name]}不变")
        return neutral
    if absolute:
        value = absolute[0]
        if name != "pitch" and value <= 0:
            ins.notes.append(f"{name} {value:g} is not positive: left unchanged / "
                             f"{_ZH_NAME[name]}必须大于 0")
            return neutral
    else:
        level = max(rel, key=abs)
        value = relative(level)
    lo, hi = bounds
    clamped = min(max(value, lo), hi)
    if clamped != value:
        ins.notes.append(f"{name} {value:g}{unit.strip()} is outside {lo:g}–{hi:g}; using "
                         f"{clamped:g} / {_ZH_NAME[name]}超出范围，已调整为 {clamped:g}")
    shown = f"{clamped:+.1f}{unit}" if name == "pitch" else f"{unit.strip()}{clamped:.2f}"
    ins.understood.append(f"{name} {shown} ({words})")
    return clamped


_ZH_NAME = {"speed": "语速", "volume": "音量", "pitch": "音高"}


def _leftovers(s: str) -> list[str]:
    """Pieces no rule consumed, minus filler words: what the user must be told about."""
    out: list[str] = []
    for piece in re.split(r"[|\s,，.。!！?？;；:：、\"“”'‘’()\[\]【】《》~～\-—]+", s):
        if not piece:
            continue
        if re.search(r"[\u3400-\u9fff]", piece):
            out.extend(_leftover_zh(piece))
        elif piece not in FILLERS_EN:
            out.append(piece)
    return _merge_english(out)


def _leftover_zh(piece: str) -> list[str]:
    rest = piece
    for w in _FILLERS_ZH_SORTED:
        rest = rest.replace(w, " ")
    return [p for p in rest.split() if p and p not in FILLERS_EN]


_FILLERS_ZH_SORTED = sorted(set(FILLERS_ZH), key=len, reverse=True)


def _merge_english(words: list[str]) -> list[str]:
    """Keep unknown pieces unique, in order."""
    return list(dict.fromkeys(words))
