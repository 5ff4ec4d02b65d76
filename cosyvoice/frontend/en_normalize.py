"""English text normalization: written forms → plain speakable words, before espeak.

espeak-ng reads plain digits but not currencies, dates, units, ordinals with suffixes,
abbreviations with periods (``Dr.`` ends its clause) or roman numerals in context, so
these are rewritten here. ``normalize_en`` applies an ordered rule table; each rule is a
compiled regex and a replacement, and the order matters (commented at each rule): the
specific forms (URLs, dates, times, money, units) run before the generic number speller.

Output style is American English without "and" inside numbers ("one hundred five"),
matching espeak's own reading of digits. All-caps acronyms are left for espeak, which
spells them with acronym stress ("GPU" → dʒˌiːpˌiːjˈuː) whereas spaced letters
("A P I") make a lone "A" the article ɐ; only plurals ("GPUs", whose "s" espeak drops in
some positions) and a few measured misreadings are rewritten.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from cosyvoice.frontend.clean import Rule, apply_rules, rule
from cosyvoice.frontend.en_numbers import (
    _MAX_DIGITS,
    _ONES,
    _plural,
    cardinal,
    fraction,
    number,
    ordinal,
    spell_digits,
    year,
)
from cosyvoice.frontend.en_tables import (
    _B,
    _COUNTED_CONTEXT,
    _CURRENCIES,
    _CURRENCY_CODES,
    _MONEY_SCALES,
    _MONTH_BY_ABBR,
    _MONTH_RE,
    _MONTHS,
    _REGNAL_NAMES,
    _ROMAN,
    _ROMAN_RE,
    _SENTENCE_STARTERS,
    _SPELL_OUT,
    _TITLES,
    _UNIT_RE,
    _UNITS,
    _WORD_ACRONYMS,
    _YEAR_CONTEXT,
    _YEARISH,
    NUM,
)

# ---------------------------------------------------------------------------------------
# Unicode punctuation
# ---------------------------------------------------------------------------------------

_PUNCT = str.maketrans({
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'", "`": "'",
    "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"', "«": '"', "»": '"',
    "—": " — ", "―": " — ", "‒": "–", "−": "-", "‐": "-", "‑": "-",
    "…": "...", "×": " times ", "÷": " divided by ", "⁄": "/",
    "™": " ", "®": " ", "©": " ",
})
_KEEP_FROM_NFKC = set("²³")  # NFKC would make "m²" into "m2"


def _normalize_unicode(text: str) -> str:
    """Curly quotes → straight, dashes/minus unified, full-width and ligatures → ASCII."""
    text = unicodedata.normalize("NFC", text).translate(_PUNCT)
    return "".join(
        ch if ch in _KEEP_FROM_NFKC else unicodedata.normalize("NFKC", ch) for ch in text
    )


# ---------------------------------------------------------------------------------------
# Replacement functions (one per rule family)
# ---------------------------------------------------------------------------------------

def _spell_chars(text: str) -> str:
    """Read a URL/email part: "." → dot, "/" → slash, digits one by one."""
    names = {".": " dot ", "/": " slash ", "-": " dash ", "_": " underscore ", "~": " tilde ",
             "@": " at ", ":": " colon ", "+": " plus ", "=": " equals ", "#": " hash ",
             "&": " and ", "?": " question mark ", "%": " percent "}
    out = "".join(names.get(ch, f" {_ONES[int(ch)]} " if ch.isdigit() else ch) for ch in text)
    return re.sub(r"\s+", " ", out).strip()


def _url(m: re.Match[str]) -> str:
    url = re.sub(r"^(?:https?|ftp)://", "", m.group(0), flags=re.I)
    url = re.sub(r"^www\.", "w w w.", url, flags=re.I).rstrip("/")
    return _spell_chars(url)


def _phone(m: re.Match[str]) -> str:
    return ", ".join(spell_digits(g) for g in m.groups() if g)


def _date(month: int, day: int, yr: str | None) -> str | None:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    words = f"{_MONTHS[month - 1]} {ordinal(day)}"
    return f"{words}, {year(_full_year(yr))}" if yr else words


def _full_year(yr: str) -> int:
    """Two-digit years pivot at 50: "26" → 2026, "99" → 1999."""
    n = int(yr)
    if len(yr) == 2:
        n += 2000 if n < 50 else 1900
    return n


def _numeric_date(m: re.Match[str]) -> str:
    """US month/day/year; day/month when the first field cannot be a month."""
    a, b, yr = int(m.group(1)), int(m.group(2)), m.group(3)
    month, day = (b, a) if a > 12 >= b else (a, b)
    return _date(month, day, yr) or m.group(0)


def _iso_date(m: re.Match[str]) -> str:
    return _date(int(m.group(2)), int(m.group(3)), m.group(1)) or m.group(0)


def _month_name(word: str) -> str:
    """"Dec." / "Sept" / "december" → "December"."""
    return _MONTH_BY_ABBR[word.rstrip(".").lower()[:3]]


def _month_day(m: re.Match[str]) -> str:
    """"December 2, 2026" → "December second, twenty twenty-six"."""
    day = int(m.group("day"))
    if not 1 <= day <= 31:
        return m.group(0)
    words = f"{_month_name(m.group('month'))} {ordinal(day)}"
    return f"{words}, {year(int(m.group('year')))}" if m.group("year") else words


def _day_month(m: re.Match[str]) -> str:
    """"2 December 2026" → "the second of December, twenty twenty-six"."""
    day = int(m.group("day"))
    if not 1 <= day <= 31:
        return m.group(0)
    words = f"the {ordinal(day)} of {_month_name(m.group('month'))}"
    return f"{words}, {year(int(m.group('year')))}" if m.group("year") else words


def _ampm(suffix: str | None, m: re.Match[str]) -> str:
    """"p.m." → " PM" ("PM." when the dotted form also ended a sentence)."""
    if not suffix:
        return ""
    word = " AM" if suffix[0] in "aA" else " PM"
    rest = m.string[m.end():]
    ends = suffix.endswith(".") and (not rest.strip() or re.match(r"\s+[A-Z]", rest))
    return word + ("." if ends else "")


def _clock(m: re.Match[str]) -> str:
    """"10:30" → "ten thirty", "14:05" → "fourteen oh five", "10:00" → "ten o'clock"."""
    h, mins, secs, suffix = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
    if h > 24 or mins > 59 or (suffix and not 1 <= h <= 12):
        return m.group(0)
    if mins == 0:
        words = cardinal(h) if suffix else (
            f"{cardinal(h)} o'clock" if 1 <= h <= 12 else f"{cardinal(h)} hundred")
    else:
        words = f"{cardinal(h)} {'oh ' if mins < 10 else ''}{cardinal(mins)}"
    if secs:
        words += f" and {cardinal(int(secs))} second{'s' if int(secs) != 1 else ''}"
    return words + _ampm(suffix, m)


def _hour_ampm(m: re.Match[str]) -> str:
    """"7 p.m." → "seven PM"."""
    h = int(m.group(1))
    return cardinal(h) + _ampm(m.group(2), m) if 1 <= h <= 12 else m.group(0)


def _money_amount(value: str, names: tuple[str, str, str, str]) -> str:
    """"12.50" → "twelve dollars and fifty cents"; "0.99" → "ninety-nine cents"."""
    one, many, sub_one, sub_many = names
    whole, _, frac = value.replace(",", "").partition(".")
    if len(frac) > 2 or (frac and not sub_one) or len(whole) > _MAX_DIGITS:
        return f"{number(value)} {many}"
    units = int(whole or 0)
    cents = int(frac.ljust(2, "0")) if frac else 0
    parts = [f"{cardinal(units)} {one if units == 1 else many}"] if units or not cents else []
    if cents:
        parts.append(f"{cardinal(cents)} {sub_one if cents == 1 else sub_many}")
    return " and ".join(parts)


def _money(m: re.Match[str]) -> str:
    """Currency with optional range and scale: "$5-10", "$2.5 million", "€5"."""
    symbol = m.group("sym") or _CURRENCY_CODES[m.group("code")]
    names = _CURRENCIES[symbol]
    sign = "minus " if m.group("neg") else ""
    value, upper, scale = m.group("val"), m.group("upper"), m.group("scale")
    if scale:
        scale_word = _MONEY_SCALES[scale.lower()]
        rng = f" to {number(upper)}" if upper else ""
        return f"{sign}{number(value)}{rng} {scale_word} {names[1]}"
    if upper:
        return f"{sign}{number(value)} to {_money_amount(upper, names)}"
    return sign + _money_amount(value, names)


def _unit(m: re.Match[str]) -> str:
    one, many = _UNITS[m.group(2)]
    value = m.group(1)
    return f"{number(value)} {one if value.lstrip('-') == '1' else many}"


def _range(m: re.Match[str]) -> str:
    """"3-5" → "3 to 5" (numbers spelled later); year ranges are read as years."""
    a, b = m.group(1), m.group(2)
    if re.fullmatch(_YEARISH, a) and re.fullmatch(_YEARISH, b):
        return f"{year(int(a))} to {year(int(b))}"
    if re.fullmatch(_YEARISH, a) and re.fullmatch(r"\d\d", b):  # "2020-21"
        return f"{year(int(a))} to {'oh ' if b[0] == '0' else ''}{cardinal(int(b))}"
    return f"{a} to {b}"


def _fraction(m: re.Match[str]) -> str:
    """Proper fractions only: "3/4" → "three quarters"; "24/7" is left for the slash."""
    num, den = int(m.group(1)), int(m.group(2))
    return fraction(num, den) if 0 < num < den else m.group(0)


def _decade(m: re.Match[str]) -> str:
    """"1990s" → "nineteen nineties", "'80s" → "eighties"."""
    words = year(int(m.group(1))) if len(m.group(1)) == 4 else cardinal(int(m.group(1)))
    head, _, last = words.rpartition(" ")
    return f"{head} {_plural(last)}".strip()


def _roman_value(numeral: str) -> int:
    values = [_ROMAN[ch] for ch in numeral]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v
               for i, v in enumerate(values))


def _roman_counted(m: re.Match[str]) -> str:
    """"Chapter IV" → "Chapter four", "World War II" → "World War two"."""
    return f"{m.group(1)} {cardinal(_roman_value(m.group(2)))}"


def _roman_regnal(m: re.Match[str]) -> str:
    """"Henry VIII" → "Henry the Eighth"; a lone "I" only when titled or clause-final."""
    numeral, rest = m.group("num"), m.string[m.end():]
    if numeral == "I" and not m.group("title") and re.match(r"\s*[A-Za-z]", rest):
        return m.group(0)
    return f"{m.group('name')} the {ordinal(_roman_value(numeral)).capitalize()}"


def _year_match(m: re.Match[str]) -> str:
    return f"{m.group(1)} {year(int(m.group(2)))}"


def _abbrev(word: str, can_end: bool = False) -> Callable[[re.Match[str]], str]:
    """Replacement for an abbreviation; keeps its period when it ends a sentence."""
    def replace(m: re.Match[str]) -> str:
        rest = m.string[m.end():]
        ends = can_end and (not rest.strip() or re.match(r"\s+[A-Z]", rest))
        return word + ("." if ends else "")
    return replace


def _saint_or_street(m: re.Match[str]) -> str:
    """"St. Louis" → "Saint", "Main St." → "Street": a capitalized name before "St."
    (not a sentence's first word, not "In"/"The" ...) makes it a street."""
    before = m.string[max(0, m.start() - 60):m.start()].split()
    street_name = (
        len(before) >= 2 and before[-1][:1].isupper() and not before[-2].endswith((".", "!", "?"))
        and not re.fullmatch(_SENTENCE_STARTERS, before[-1])
    )
    if not street_name and re.match(r"\s+[A-Z]", m.string[m.end():]):
        return "Saint"
    return _abbrev("Street", can_end=True)(m)


def _dotted_acronym(m: re.Match[str]) -> str:
    """"U.S." → "US" (espeak spells capitals), keeping a final period at the end."""
    letters = m.group(0).replace(".", "").upper()
    return letters + ("." if not m.string[m.end():].strip() else "")


def _acronym_plural(m: re.Match[str]) -> str:
    """"GPUs" → "G-P-U's": espeak drops the plural "s" of "GPUs" clause-finally."""
    core = m.group(1)
    return m.group(0) if core in _WORD_ACRONYMS else "-".join(core) + "'s"


def _number_token(m: re.Match[str]) -> str:
    return f" {number(m.group(0))} "


# ---------------------------------------------------------------------------------------
# The ordered rule table
# ---------------------------------------------------------------------------------------

_RULES: list[Rule] = [
    # -- URLs and e-mail first: they hold dots, digits, slashes and "@".
    # (left edges and possessive groups keep these linear on long dotted tokens)
    (rule(r"(?<![\w.+-])[\w.+-]++@[\w-]+(?:\.[\w-]+)+\b"), _url),
    (rule(r"\b(?:https?://|ftp://|www\.)[^\s<>\"']+[^\s<>\"'.,;:!?)]", re.I), _url),
    (rule(r"(?<![\w.@/-])(?:[\w-]++\.)++(?:com|org|net|io|dev|ai|gov|edu)\b"
        r"(?:/[^\s<>\"']*[^\s<>\"'.,;:!?)])?"), _url),
    # -- Phone numbers before ranges: "(555) 123-4567", "555-123-4567", "555-1234".
    (rule(r"(?<![\w-])\(?(\d{3})\)?[ .-](\d{3})[.-](\d{4})(?![\w-])"), _phone),
    (rule(r"(?<![\w-])(\d{3})-(\d{4})(?![\w-])"), _phone),
    # -- Dates before ranges and fractions: ISO, US m/d/y, then month names.
    (rule(r"(?<![\w-])(\d{4})-(\d{2})-(\d{2})(?![\w-])"), _iso_date),
    (rule(r"(?<![\w/])(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})(?![\w/])"), _numeric_date),
    (rule(rf"\b(?P<month>{_MONTH_RE})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b"
        r"(?:,?\s+(?P<year>\d{4})\b)?"), _month_day),
    (rule(rf"{_B}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<month>{_MONTH_RE})\b\.?"
        r"(?:,?\s+(?P<year>\d{4})\b)?"), _day_month),
    # -- Times: "10:30", "10:30:15 pm", "7 p.m." (before ranges: "9-5" is not a time).
    (rule(r"(?<![\w:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([ap]\.m\.|[ap]m\b|[AP]M\b))?"
        r"(?![\w:])", re.I), _clock),
    (rule(r"(?<![\w:.])(\d{1,2})\s*([ap]\.m\.|[ap]m\b)", re.I), _hour_ampm),
    # -- Money: symbol or code, optional range and scale ("$5-10", "$2.5 million").
    (rule(rf"(?P<neg>-)?(?P<sym>[$€£¥])\s?(?P<val>{NUM})(?:\s?(?:-|–|to)\s?[$€£¥]?"
        rf"(?P<upper>{NUM}))?(?:\s?(?P<scale>thousand|million|billion|trillion"
        r"|[kKmMbB]n?|tn)\b)?(?P<code>)"), _money),
    (rule(rf"{_B}(?P<neg>)(?P<sym>)(?P<val>{NUM})(?P<upper>)(?P<scale>)\s?(?P<code>USD|EUR|GBP|JPY)"
        r"\b"), _money),
    (rule(rf"(?P<neg>)(?P<sym>)(?P<code>USD|EUR|GBP|JPY)\s?(?P<val>{NUM})(?P<upper>)(?P<scale>)"
        r"(?![\w.,]\d)"), _money),
    # -- Numeric ranges "3-5", "10–20%": the dash becomes "to", digits stay for later rules.
    (rule(rf"{_B}({NUM})(?:-|\s?–\s?)({NUM})(?![\d-])"), _range),
    # -- Percent and units, after ranges so "10 to 20%" reads "ten to twenty percent".
    (rule(rf"{_B}(-?{NUM})\s?%"), lambda m: f"{number(m.group(1))} percent"),
    (rule(rf"{_B}(-?{NUM})\s?({_UNIT_RE})(?![\w/²³])"), _unit),
    (rule(rf"{_B}({NUM})x\b"), lambda m: f"{number(m.group(1))} times"),
    # -- Fractions "3/4" (dates are gone by now); small denominators only.
    (rule(r"(?<![\w/.])(\d{1,2})/([2-9]|1[0-2])(?![\w/]|\.\d)"), _fraction),
    # -- Ordinals "1st", "22nd", "1,000th"; decades "1990s", "'80s".
    (rule(rf"{_B}(\d{{1,3}}(?:,\d{{3}})+|\d{{1,18}})(?:st|nd|rd|th)\b", re.I),
     lambda m: ordinal(int(m.group(1).replace(",", "")))),
    (rule(r"(?<![\w.,])'?(1[1-9]\d0|20\d0|[1-9]0)'?s\b"), _decade),
    # -- Roman numerals, only after words that announce them.
    (rule(rf"\b({_COUNTED_CONTEXT})\s+({_ROMAN_RE})\b"), _roman_counted),
    (rule(rf"\b(?P<name>(?P<title>(?:{_TITLES})\s+[A-Z][a-z]+)|{_REGNAL_NAMES})\s+"
        rf"(?P<num>{_ROMAN_RE})\b"), _roman_regnal),
    # -- Years: after a year word ("in 1999", "since 2026", "May 2020"), before AD/BC, or
    #    a 1100-2099 number standing alone at the start or end of a clause.
    (rule(rf"\b((?i:{_YEAR_CONTEXT}))\s+(\d{{4}})\b(?![.,]\d)"), _year_match),
    (rule(r"(?<![\w.,])(\d{3,4})\s?(AD|BC|BCE|CE|A\.D\.|B\.C\.)(?!\w)"),
     lambda m: f"{year(int(m.group(1)))} {m.group(2).replace('.', '')}"),
    (rule(rf"(?:^|(?<=[.!?;:]\s)|(?<=[(\"]))({_YEARISH})\b(?![.,]\d)"),
     lambda m: year(int(m.group(1)))),
    (rule(rf"(?<![\w.,$-])({_YEARISH})(?=\s*(?:[.,;:!?)\"]|$))(?![.,]\d)"),
     lambda m: year(int(m.group(1)))),
    # -- Abbreviations (periods would end espeak's clause: "Dr." → "dˈɑːktɚ." | ...).
    (rule(r"\be\.\s?g\.", re.I), "for example"),
    (rule(r"\bPh\.\s?D\."), _abbrev("PhD", can_end=True)),
    (rule(r"\bi\.\s?e\.", re.I), "that is"),
    (rule(r"\ba\.k\.a\.", re.I), "also known as"),
    (rule(r"\betc\.", re.I), _abbrev("et cetera", can_end=True)),
    (rule(r"\bvs\.?(?=\s)", re.I), "versus"),
    (rule(r"\bapprox\.", re.I), "approximately"),
    (rule(r"\bca\.(?=\s)"), "circa"),
    (rule(r"\bcf\.", re.I), "compare"),
    (rule(r"\bNo\.\s?(?=\d)|\bno\.\s?(?=\d)"), "number "),
    (rule(r"\bNos\.\s?(?=\d)"), "numbers "),
    (rule(r"\b[Pp]p\.\s?(?=\d)"), "pages "),
    (rule(r"\b[Pp]\.\s?(?=\d)"), "page "),
    (rule(r"\bFigs?\.\s?(?=\d)"), "Figure "),
    (rule(r"\bDr\.(?=\s|$)"), "Doctor"),
    (rule(r"\bMr\.(?=\s|$)"), "Mister"),
    (rule(r"\bMrs\.(?=\s|$)"), "Missus"),
    (rule(r"\bMs\.(?=\s|$)"), "Miz"),
    (rule(r"\bProf\.(?=\s|$)"), "Professor"),
    (rule(r"\bRev\.(?=\s)"), "Reverend"),
    (rule(r"\bCapt\.(?=\s)"), "Captain"),
    (rule(r"\bGen\.(?=\s[A-Z])"), "General"),
    (rule(r"\bLt\.(?=\s)"), "Lieutenant"),
    (rule(r"\bSgt\.(?=\s)"), "Sergeant"),
    (rule(r"\bMt\.(?=\s)"), "Mount"),
    (rule(r"\bSt\.(?=\s|$)"), _saint_or_street),
    (rule(r"\bAve\.(?=\s|$)"), _abbrev("Avenue", can_end=True)),
    (rule(r"\bRd\.(?=\s|$)"), _abbrev("Road", can_end=True)),
    (rule(r"\bBlvd\.(?=\s|$)"), _abbrev("Boulevard", can_end=True)),
    (rule(r"\bJr\.(?=\s|$|,)"), _abbrev("Junior", can_end=True)),
    (rule(r"\bSr\.(?=\s|$|,)"), _abbrev("Senior", can_end=True)),
    (rule(r"\bInc\.(?=\s|$|,)"), _abbrev("Incorporated", can_end=True)),
    (rule(r"\bLtd\.(?=\s|$|,)"), _abbrev("Limited", can_end=True)),
    (rule(r"\bCorp\.(?=\s|$|,)"), _abbrev("Corporation", can_end=True)),
    (rule(r"\bCo\.(?=\s|$|,)"), _abbrev("Company", can_end=True)),
    (rule(r"\bDept\.(?=\s|$|,)"), _abbrev("Department", can_end=True)),
    # -- Acronyms: dotted "U.S." → "US"; plurals "GPUs" → "G-P-U's"; measured misreads.
    (rule(r"(?<![\w.])(?:[A-Za-z]\.){2,}(?![\w])"), _dotted_acronym),
    (rule(r"(?<![\w.])(?:[A-Z]\.\s){2,}(?=[A-Z][a-z])"), lambda m: m.group(0).replace(".", "")),
    (rule(rf"(?<![\w.])([A-Z])\.(?=\s(?!{_SENTENCE_STARTERS}\b)[A-Z][a-z])"), r"\1"),
    (rule(r"\b([A-Z]{2,5})'?s\b"), _acronym_plural),
    (rule(r"\b(" + "|".join(sorted(_SPELL_OUT)) + r")\b"), lambda m: "-".join(m.group(1))),
    # -- Symbols with a number: "#1" → "number one", "+5" → "plus five".
    (rule(r"#\s?(?=\d)"), "number "),
    (rule(r"#(?=[A-Za-z])"), "hashtag "),
    (rule(r"(?<![\w+])\+(?=\d)"), "plus "),
    # -- Letters glued to digits ("MP3", "COVID-19", "5G"): split so each part is read.
    (rule(r"(?<=[A-Za-z])-?(?=\d)|(?<=\d)(?=[A-Za-z])"), " "),
    # -- Negative numbers, dotted versions ("1.2.3"), then every remaining number.
    (rule(r"(?<![\w.,])-(?=\.?\d)"), "minus "),
    (rule(r"(?<![\w.,])\d+(?:\.\d+){2,}(?![\w])"),
     lambda m: " point ".join(number(p) for p in m.group(0).split("."))),
    (rule(rf"{NUM}|(?<!\d)\.\d+"), _number_token),
    # -- Remaining symbols.
    (rule(r"\s*&\s*"), " and "),
    (rule(r"\s*\+\s*"), " plus "),
    (rule(r"\s*=\s*"), " equals "),
    (rule(r"\s*@\s*"), " at "),
    (rule(r"%"), " percent "),
    (rule(r"°"), " degrees "),
    (rule(r"\s<=?\s"), lambda m: " less than or equal to " if "=" in m.group(0) else " less than "),
    (rule(r"\s>=?\s"),
     lambda m: " greater than or equal to " if "=" in m.group(0) else " greater than "),
    (rule(r"[~≈]\s*"), "about "),
    (rule(r"(?<=\w)/(?=\w)"), " "),  # "and/or" → "and or"
    (rule(r"\s*[—–]\s*|\s+-+\s+|\s*--+\s*"), ", "),  # dashes used as pauses
    (rule(r"[\[\]{}|]"), ", "),
    (rule(r"[*_^\\<>#/~`]"), " "),
]


def _tidy(text: str) -> str:
    """Collapse whitespace, drop spaces before punctuation and repeated commas."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r" +([,.!?;:)])", r"\1", text)
    text = re.sub(r"([(]) +", r"\1", text)
    text = re.sub(r",(\s*,)+", ",", text)
    return re.sub(r"^[,\s]+|(?<=[.!?;:])\s*,", "", text).strip()


def normalize_en(text: str) -> str:
    """Cleaned English text (see :func:`~cosyvoice.frontend.clean.clean_text`) → plain
    words for espeak: numbers, dates, times, money, units,
    abbreviations, acronym plurals, roman numerals (in context), URLs and symbols.

    Years: a 4-digit number is read as a year ("nineteen ninety-nine", "two thousand
    five", "twenty twenty-six") when a year word precedes it (in, since, by, from, until,
    of, during, month names ...), when AD/BC follows, when it is part of a range of two
    such years ("1999-2005"), or when a number 1100-2099 stands alone at the start or
    end of a clause ("It was 1999.", "1999 was ..."). Elsewhere it is a count
    ("1500 people" → "one thousand five hundred people"): a number followed by a noun is
    far more often a quantity, and misreading a year as a count stays intelligible.
    """
    return _tidy(apply_rules(_normalize_unicode(text), _RULES))
