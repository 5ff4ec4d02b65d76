"""Chinese text normalization: written forms → Chinese characters, before G2P.

``normalize_zh(text)`` returns hanzi, Latin words left as they are (the mixed-text
splitter, :mod:`cosyvoice.frontend.mixed`, routes those to English) and a small set of
Chinese punctuation kept as prosodic breaks: ``，。！？、；：…``. Every Arabic number is
spelled out by its context; emoji, symbols, quotes and brackets are dropped.

Libraries and own rules:

* ``cn2an`` spells cardinals and decimals (``10086`` → 一万零八十六, ``100000`` → 十万,
  ``3.14`` → 三点一四): its place-value and 零 rules are the well-tested part.
* ``opencc-python-reimplemented`` (``t2s``, character-level) converts traditional to
  simplified characters, so the pinyin dictionaries see the forms they know.
* Our own rules (the ordered table ``_RULES``): which reading a number gets by context —
  phone numbers digit by digit with 幺 for 1, years digit by digit, dates, clock times,
  money, percentages, fractions, ranges, scores, signs, ordinals, units — and the
  二/两 choice: 两 for a lone 2 before a measure word (两个, 两公里, 两点) and for a
  leading 2 before 百/千/万/亿 (两千, 两万三); 二 everywhere else (第二, 二月二日,
  二点五, 十二, 百分之二, digit strings).
* WeTextProcessing was not used: it installs (pynini, ~165 MB) but compiles its FST
  grammars on first use and hides the 两/幺/year choices this module needs to control.

Money: ``¥12.50`` → 十二元五角 (a currency sign reads yuan/jiao/fen); a number followed by
a written 元 reads as a plain number (``12.5元`` → 十二点五元).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import cn2an

from cosyvoice.frontend.clean import Rule, apply_rules, rule

_DIGITS = "零一二三四五六七八九"
_PHONE_DIGITS = "零幺二三四五六七八九"
_MAX_CARDINAL_DIGITS = 16  # cn2an's limit; longer numbers are read digit by digit

# Words after which 2 reads 两 (two of something). Not 月/号/日 (二月, 二号), not 分 (a
# score), not 度/% (temperatures and percents keep 二).
_MEASURES = (
    "个 只 本 张 条 件 位 名 次 天 年 周 星期 小时 钟头 分钟 秒 岁 块 元 角 毛 斤 两 公里 里 米 "
    "厘米 毫米 千克 公斤 克 吨 升 毫升 倍 种 层 辆 台 部 家 杯 瓶 碗 双 对 份 套 篇 首 门 节 点 "
    "项 场 届 批 页 段 句 步 遍 趟 声 口 把 根 棵 颗 粒 头 匹 架 艘 座 栋 间 所 扇 道 顿 "
    "阵 股 群 片 串 平方 立方 百 千 万 亿 类 样 支 枝 封 幅 盒 包 袋 箱 桶 盘 罐 轮 组"
).split()
_MEASURE_RE = "|".join(sorted(set(_MEASURES), key=len, reverse=True))

# Latin / symbol units after a number → (Chinese name, whether a lone 2 reads 两).
_UNITS = {
    "km/h": ("公里每小时", True), "m/s": ("米每秒", True), "kWh": ("千瓦时", True),
    "mAh": ("毫安时", True), "GHz": ("吉赫兹", True), "MHz": ("兆赫兹", True),
    "kHz": ("千赫兹", True), "Hz": ("赫兹", True), "TB": ("太字节", True),
    "GB": ("吉字节", True), "MB": ("兆字节", True), "KB": ("千字节", True),
    "kB": ("千字节", True), "km": ("公里", True), "cm": ("厘米", True), "mm": ("毫米", True),
    "nm": ("纳米", True), "um": ("微米", True), "μm": ("微米", True), "kg": ("千克", True),
    "mg": ("毫克", True), "ml": ("毫升", True), "mL": ("毫升", True), "kW": ("千瓦", True),
    "ms": ("毫秒", True), "min": ("分钟", True), "°C": ("摄氏度", False),
    "°F": ("华氏度", False), "°": ("度", False), "m": ("米", True), "g": ("克", True),
    "L": ("升", True), "W": ("瓦", True), "V": ("伏", True), "h": ("小时", True),
    "s": ("秒", True),
}
_UNIT_RE = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_CURRENCY = {"¥": "元", "$": "美元", "€": "欧元", "£": "英镑"}

# Context words before a digit string that make it a phone number (1 → 幺) or a code.
_PHONE_WORDS = ("电话", "手机", "热线", "拨打", "致电", "呼叫", "号码", "联系方式", "客服")
_CODE_WORDS = ("编号", "验证码", "密码", "房间", "邮编", "车牌", "工号", "学号", "账号",
               "卡号", "尾号", "单号", "型号", "代码", "车次", "航班")

# Punctuation kept as prosodic breaks, after ASCII/width normalization.
_PUNCT_MAP = {
    ",": "，", ".": "。", "!": "！", "?": "？", ";": "；", ":": "：", "、": "、",
    "。": "。", "…": "…", "～": "", "—": "，", "–": "，", "(": "，", ")": "，",
    "[": "，", "]": "，", "【": "，", "】": "，", "《": "", "》": "", "「": "", "」": "",
    "『": "", "』": "", '"': "", "'": "", "“": "", "”": "", "‘": "", "’": "", "·": "",
    "〈": "", "〉": "", "\n": "。",
}
_BREAKS = "，。！？、；：…"


# ---------------------------------------------------------------------------------------
# Number readers
# ---------------------------------------------------------------------------------------

def digits(text: str, phone: bool = False) -> str:
    """Read a digit string one digit at a time: "2026" → 二零二六; phone 1 → 幺."""
    table = _PHONE_DIGITS if phone else _DIGITS
    return "".join(table[int(d)] if d.isdigit() else "" for d in text)


@lru_cache(maxsize=1024)
def cardinal(number: str, liang: bool = False, ordinal: bool = False) -> str:
    """Integer string → Chinese: "10086" → 一万零八十六, "-5" → 负五.

    ``liang``: the number counts something (a measure word follows), so a lone 2 reads 两.
    A leading 2 before 百/千/万/亿 reads 两 (两千, 两万三千) unless ``ordinal`` (第二千).
    """
    sign, number = ("负", number[1:]) if number.startswith("-") else ("", number)
    number = number.lstrip("0") or "0"
    if len(number) > _MAX_CARDINAL_DIGITS:
        return sign + digits(number)
    spoken = cn2an.an2cn(number)
    if spoken == "二" and liang:
        spoken = "两"
    elif len(spoken) > 1 and spoken[0] == "二" and spoken[1] in "百千万亿" and not ordinal:
        spoken = "两" + spoken[1:]
    return sign + spoken


def decimal(number: str, liang: bool = False) -> str:
    """"3.14" → 三点一四, "-0.5" → 负零点五; an integer goes to :func:`cardinal`."""
    if "." not in number:
        return cardinal(number, liang)
    whole, frac = number.split(".", 1)
    return cardinal(whole or "0") + "点" + digits(frac)


def _money(amount: str, unit: str) -> str:
    """Amount with a currency sign: yuan read as 元角分 (12.05 → 十二元零五分)."""
    whole, _, frac = amount.partition(".")
    if unit != "元":
        return decimal(amount, liang=True) + unit
    frac = (frac + "00")[:2]
    jiao, fen = int(frac[0]), int(frac[1])
    out = cardinal(whole, liang=True) + "元" if int(whole or "0") or not (jiao or fen) else ""
    if jiao:
        out += cardinal(str(jiao), liang=True) + "角"
    if fen:
        out += ("零" if out and not jiao else "") + cardinal(str(fen), liang=True) + "分"
    return out


# ---------------------------------------------------------------------------------------
# Replacement functions (one per rule family)
# ---------------------------------------------------------------------------------------

def _context_before(m: re.Match[str], width: int = 8) -> str:
    return m.string[max(0, m.start() - width):m.start()]


def _phone(m: re.Match[str]) -> str:
    """+86 138-0013-8000 → 加八六幺三八零零幺三八零零零."""
    prefix = "加" + digits(m.group("cc"), phone=True) if m.group("cc") else ""
    return prefix + digits(m.group("num"), phone=True)


def _keyword_digits(m: re.Match[str]) -> str:
    """A digit string after 电话/编号/验证码 ... reads digit by digit."""
    before = _context_before(m, 10)
    if any(w in before for w in _PHONE_WORDS):
        return digits(m.group(0), phone=True)
    if any(w in before for w in _CODE_WORDS) or m.group(0).startswith("0"):
        return digits(m.group(0))
    return m.group(0)


def _date_ymd(m: re.Match[str]) -> str:
    """2026-12-02, 2026/12/2, 2026.12.02 → 二零二六年十二月二日."""
    month, day = int(m.group("m")), int(m.group("d"))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return m.group(0)
    return f"{digits(m.group('y'))}年{cardinal(str(month))}月{cardinal(str(day))}日"


def _year(m: re.Match[str]) -> str:
    return digits(m.group(1)) + "年"


def _month_day(m: re.Match[str]) -> str:
    """Numbers before 月/日/号 are dates or months: 二月, 二日 (never 两)."""
    return cardinal(m.group(1)) + m.group(2)


def _clock(m: re.Match[str]) -> str:
    """10:30 → 十点三十分, 10:05 → 十点零五分, 2:00 → 两点, 10:30:15 → …十五秒."""
    hour, minute, sec = int(m.group(1)), int(m.group(2)), m.group(3)
    if hour > 24 or minute > 59 or (sec and int(sec) > 59):
        return m.group(0)
    out = cardinal(str(hour), liang=True) + "点"
    if minute or sec:
        out += ("零" if minute < 10 else "") + cardinal(str(minute)) + "分"
    if sec:
        out += ("零" if int(sec) < 10 else "") + cardinal(str(int(sec))) + "秒"
    return out


def _currency(m: re.Match[str]) -> str:
    return _money(m.group(2), _CURRENCY[m.group(1)])


def _percent(m: re.Match[str]) -> str:
    """98% → 百分之九十八; 3‰ → 千分之三; -2% → 负百分之二."""
    sign, num = ("负", m.group(2)) if m.group(1) else ("", m.group(2))
    return sign + ("百分之" if m.group(3) == "%" else "千分之") + decimal(num)


def _percent_range(m: re.Match[str]) -> str:
    """3-5% and 3%-5% → 百分之三到百分之五."""
    return f"百分之{decimal(m.group(1))}到百分之{decimal(m.group(2))}"


def _fraction(m: re.Match[str]) -> str:
    """3/4 → 四分之三 (the denominator first)."""
    return f"{decimal(m.group(2))}分之{decimal(m.group(1))}"


def _unit_number(number: str, unit: str) -> str:
    name, liang = _UNITS[unit]
    return decimal(number, liang=liang) + name


def _number_unit(m: re.Match[str]) -> str:
    """5km → 五公里, 2kg → 两千克, 37.5℃ → 三十七点五摄氏度."""
    return _unit_number(m.group(1), m.group(2))


def _range(m: re.Match[str]) -> str:
    """3-5, 3~5, 3至5 (with an optional unit or measure word) → 三到五…."""
    lo, hi, unit = m.group(1), m.group(2), m.group(3) or ""
    if unit in _UNITS:
        name, liang = _UNITS[unit]
        return f"{decimal(lo, liang)}到{decimal(hi, liang)}{name}"
    liang = bool(re.match(_MEASURE_RE, unit))
    return f"{decimal(lo, liang)}到{decimal(hi, liang)}{unit}"


def _score(m: re.Match[str]) -> str:
    """3:1 (not a clock time) → 三比一."""
    return f"{cardinal(m.group(1))}比{cardinal(m.group(2))}"


_OPS = {"+": "加", "×": "乘", "*": "乘", "÷": "除以", "=": "等于", "<": "小于", ">": "大于"}


def _arith(m: re.Match[str]) -> str:
    """1+1=2 → 一加一等于二 (the whole chain; a minus after an operator is a sign)."""
    parts = re.split(r"\s?([+×*÷=<>])\s?", m.group(0))
    return "".join(_OPS[p] if p in _OPS else decimal(p) for p in parts)


def _ordinal(m: re.Match[str]) -> str:
    return "第" + cardinal(m.group(1), ordinal=True)


def _measured(m: re.Match[str]) -> str:
    """A number before a measure word: 2个 → 两个, 12个 → 十二个, 2.5倍 → 二点五倍."""
    return decimal(m.group(1), liang=True) + m.group(2)


def _plain_number(m: re.Match[str]) -> str:
    """Any other number: leading zeros → digit by digit ("007"), else cardinal/decimal."""
    number = m.group(0)
    body = number.lstrip("-")
    if len(body) > 1 and body[0] == "0" and body[1] != ".":
        return ("负" if number[0] == "-" else "") + digits(body)
    return decimal(number)


_NUM = r"\d+(?:\.\d+)?"
_SNUM = r"-?\d+(?:\.\d+)?"
_NOT_DIGIT_BEFORE = r"(?<![\d.])"
_NOT_DIGIT_AFTER = r"(?![\d])"

# Ordered: specific forms first (phones, dates, times, money, percents), then units and
# ranges, then measure words, then the generic number reader.
_RULES: list[Rule] = [
    # Mobile (+86 optional) and landline numbers; hyphens/spaces inside are dropped.
    (rule(r"(?:\+(?P<cc>86|852|853|886)[\s-]?|(?<!\d))(?P<num>1[3-9]\d[\s-]?\d{4}[\s-]?\d{4})"
        r"(?!\d)"),
     lambda m: _phone(m).replace(" ", "")),
    (rule(r"(?<![\d-])(?P<num>0\d{2,3}-\d{7,8}|400-\d{3}-\d{4})(?![\d-])"),
     lambda m: digits(m.group("num"), phone=True)),
    (rule(r"(?<![\d.])\d{3,}(?![\d.%])"), _keyword_digits),
    # Dates.
    (rule(r"(?<!\d)(?P<y>\d{4})([-/.])(?P<m>\d{1,2})\2(?P<d>\d{1,2})(?![\d.])"), _date_ymd),
    (rule(r"(?<![\d.])([12]\d{3})年"), _year),
    (rule(r"(?<![\d.])(\d{1,2})([月日号])"), _month_day),
    # Clock times and scores.
    (rule(r"(?<![\d:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?![\d:])"), _clock),
    (rule(r"(?<![\d:])(\d+):(\d+)(?![\d:])"), _score),
    # Money, percents, fractions.
    (rule(r"([¥$€£])\s?(\d+(?:\.\d+)?)"), _currency),
    (rule(rf"{_NOT_DIGIT_BEFORE}({_NUM})%?\s?[-~到至]\s?({_NUM})%"), _percent_range),
    (rule(rf"(?<![\d.])(-)?({_NUM})\s?([%‰])"), _percent),
    (rule(rf"{_NOT_DIGIT_BEFORE}(\d+)/(\d+){_NOT_DIGIT_AFTER}(?!/)"), _fraction),
    # Ranges (optionally with a unit or measure word), then arithmetic.
    (rule(rf"{_NOT_DIGIT_BEFORE}({_NUM})\s?[-~到至]\s?({_NUM})\s?({_UNIT_RE}|{_MEASURE_RE})?"
        r"(?![A-Za-z])"), _range),
    (rule(rf"{_NOT_DIGIT_BEFORE}{_NUM}(?:\s?[+×*÷=<>]\s?{_SNUM})+"), _arith),
    # Units, ordinals, measure words.
    (rule(rf"{_NOT_DIGIT_BEFORE}({_SNUM})\s?({_UNIT_RE})(?![A-Za-z])"), _number_unit),
    (rule(r"第(\d+)"), _ordinal),
    (rule(rf"{_NOT_DIGIT_BEFORE}({_SNUM})({_MEASURE_RE})"), _measured),
    # Everything else: a sign only where no word character stands before it.
    (rule(r"(?<![0-9A-Za-z.])-?\d+(?:\.\d+)?|\d+(?:\.\d+)?"), _plain_number),
]


# ---------------------------------------------------------------------------------------
# Characters and punctuation
# ---------------------------------------------------------------------------------------

_SUPER = {"²": "平方", "³": "立方"}
_AREA_UNITS = {"km": "公里", "cm": "厘米", "mm": "毫米", "m": "米"}
_OPENCC = None


def _t2s(text: str) -> str:
    """Traditional → simplified (OpenCC ``t2s`` tables, loaded on first use)."""
    global _OPENCC
    if _OPENCC is None:
        import opencc  # opencc-python-reimplemented: pure Python, reads its bundled tables

        _OPENCC = opencc.OpenCC("t2s")
    return _OPENCC.convert(text)


def normalize_width(text: str) -> str:
    """Full-width → half-width (NFKC), but keep the CJK punctuation ，。、 etc. apart.

    Square/cube superscripts on units are spelled first (NFKC would turn m² into m2).
    """
    text = re.sub(r"(km|cm|mm|m)([²³])",
                  lambda m: _SUPER[m.group(2)] + _AREA_UNITS[m.group(1)], text)
    text = text.replace("㎡", "平方米").replace("㎥", "立方米")
    text = unicodedata.normalize("NFKC", text)
    text = text.replace("...", "…").replace("〜", "~").replace("−", "-").replace("－", "-")
    return re.sub(r"(\d),(?=\d{3}(?!\d))", r"\1", text)  # 1,234,567 → 1234567


def _is_hanzi(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def _keep_char(ch: str) -> str:
    """Hanzi, Latin letters, spaces and break punctuation stay; symbols/emoji go."""
    if _is_hanzi(ch) or ch in _BREAKS or ch == " " or ("a" <= ch.lower() <= "z"):
        return ch
    if ch in _PUNCT_MAP:
        return _PUNCT_MAP[ch]
    if ch == "&":
        return "和"
    return ""


def _punctuation(text: str) -> str:
    """Map punctuation to the break set, drop the rest, tidy spaces and repeated breaks."""
    text = "".join(_keep_char(ch) for ch in text.replace("——", "，"))
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r" ?([，。！？、；：…]) ?", r"\1", text)
    text = re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", text)
    text = re.sub(r"[，、；：]+(?=[。！？…])", "", text)  # "，。" → "。"
    text = re.sub(r"([，。！？、；：…])\1+", r"\1", text)
    return re.sub(r"^[，。！？、；：… ]+", "", text).strip()


def normalize_zh(text: str) -> str:
    """Cleaned Chinese text (:func:`~cosyvoice.frontend.clean.clean_text`) → hanzi and
    break punctuation (see the module docstring).

    >>> normalize_zh("2026年12月2日10:05，气温-3℃，降水概率98%。")
    '二零二六年十二月二日十点零五分，气温负三摄氏度，降水概率百分之九十八。'
    """
    return _punctuation(apply_rules(_t2s(normalize_width(text)), _RULES))
