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

import html
import re
import unicodedata
from collections.abc import Callable

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str] | str]

# ---------------------------------------------------------------------------------------
# Number speller
# ---------------------------------------------------------------------------------------

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ("", "thousand", "million", "billion", "trillion", "quadrillion")
_MAX_DIGITS = 3 * len(_SCALES)  # longer numbers are read digit by digit
_ORDINAL_IRREGULAR = {
    "one": "first", "two": "second", "three": "third", "five": "fifth",
    "eight": "eighth", "nine": "ninth", "twelve": "twelfth",
}


def _below_1000(n: int) -> str:
    """0 < n < 1000 → words ("one hundred twenty-three")."""
    hundreds, rest = divmod(n, 100)
    words = [f"{_ONES[hundreds]} hundred"] if hundreds else []
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        words.append(_TENS[tens] + (f"-{_ONES[ones]}" if ones else ""))
    elif rest:
        words.append(_ONES[rest])
    return " ".join(words)


def cardinal(n: int) -> str:
    """Integer → words: -12 → "minus twelve"; beyond the quadrillions, digit by digit."""
    if n < 0:
        return "minus " + cardinal(-n)
    if n == 0:
        return "zero"
    if n >= 1000 ** len(_SCALES):
        return spell_digits(str(n))
    groups = []
    for scale in _SCALES:
        n, group = divmod(n, 1000)
        if group:
            groups.append(f"{_below_1000(group)} {scale}".strip())
        if not n:
            break
    return " ".join(reversed(groups))


def ordinal(n: int) -> str:
    """Integer → ordinal words: 22 → "twenty-second", 103 → "one hundred third"."""
    words = cardinal(n)
    head, sep, last = words.rpartition(" ")
    stem_sep = "-" if "-" in last else ""
    stem, _, last = last.rpartition("-")
    if last in _ORDINAL_IRREGULAR:
        last = _ORDINAL_IRREGULAR[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return f"{head}{sep}{stem}{stem_sep}{last}"


def year(n: int) -> str:
    """Year reading: 1999 → "nineteen ninety-nine", 2005 → "two thousand five",
    2026 → "twenty twenty-six", 1900 → "nineteen hundred", 1905 → "nineteen oh five"."""
    if not 1000 <= n <= 9999 or n % 1000 == 0 or 2000 <= n <= 2009:
        return cardinal(n)
    hi, lo = divmod(n, 100)
    if lo == 0:
        return f"{cardinal(hi)} hundred"
    return f"{cardinal(hi)} {'oh ' if lo < 10 else ''}{cardinal(lo)}"


def spell_digits(digits: str) -> str:
    """"007" → "zero zero seven" (non-digits are dropped)."""
    return " ".join(_ONES[int(d)] for d in digits if d.isdigit())


def number(token: str) -> str:
    """A numeric token ("1,234", "3.14", ".5", "007", "-2") → words."""
    sign, token = ("minus ", token[1:]) if token.startswith("-") else ("", token)
    whole, _, frac = token.replace(",", "").partition(".")
    if len(whole) > _MAX_DIGITS or (len(whole) > 1 and whole.startswith("0")):
        words = spell_digits(whole)
    else:
        words = cardinal(int(whole)) if whole else ""
    if frac:
        words = f"{words} point {spell_digits(frac)}".strip()
    return sign + words


def _plural(word: str) -> str:
    """Pluralize the last word of a number phrase: "ninety" → "nineties"."""
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def fraction(num: int, den: int) -> str:
    """3/4 → "three quarters", 1/2 → "one half", 5/8 → "five eighths"."""
    if den == 2:
        name = "half" if num == 1 else "halves"
    elif den == 4:
        name = "quarter" if num == 1 else "quarters"
    else:
        name = ordinal(den) if num == 1 else _plural(ordinal(den))
    return f"{cardinal(num)} {name}"


# ---------------------------------------------------------------------------------------
# Shared patterns and tables
# ---------------------------------------------------------------------------------------

# A number token: "1,234,567.89" (strict thousands groups) or "1234.5"; not inside a word.
NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_B = r"(?<![\w.,])"  # left edge of a number: not glued to a word, decimal or group
_YEARISH = r"1[1-9]\d\d|20\d\d"  # 1100-2099: read as a year when the context says so

_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_MONTH_BY_ABBR = {m[:3].lower(): m for m in _MONTHS}
_MONTH_RE = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)"
)

# symbol or code → (singular, plural, subunit singular, subunit plural)
_CURRENCIES = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yen", "yen", "", ""),
}
_CURRENCY_CODES = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}
_MONEY_SCALES = {
    "thousand": "thousand", "k": "thousand", "million": "million", "m": "million",
    "mn": "million", "billion": "billion", "bn": "billion", "b": "billion",
    "trillion": "trillion", "tn": "trillion",
}

# unit as written → (singular, plural). Case-sensitive; ambiguous ones ("in", "s", "A",
# "K") are left out on purpose.
_UNITS = {
    "km": ("kilometer", "kilometers"), "m": ("meter", "meters"),
    "cm": ("centimeter", "centimeters"), "mm": ("millimeter", "millimeters"),
    "km²": ("square kilometer", "square kilometers"), "m²": ("square meter", "square meters"),
    "m³": ("cubic meter", "cubic meters"),
    "mi": ("mile", "miles"), "ft": ("foot", "feet"), "yd": ("yard", "yards"),
    "kg": ("kilogram", "kilograms"), "g": ("gram", "grams"), "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"), "lbs": ("pound", "pounds"), "oz": ("ounce", "ounces"),
    "L": ("liter", "liters"), "ml": ("milliliter", "milliliters"),
    "mL": ("milliliter", "milliliters"), "gal": ("gallon", "gallons"),
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "mph": ("mile per hour", "miles per hour"), "m/s": ("meter per second", "meters per second"),
    "°C": ("degree Celsius", "degrees Celsius"), "°F": ("degree Fahrenheit", "degrees Fahrenheit"),
    "°": ("degree", "degrees"),
    "ms": ("millisecond", "milliseconds"), "sec": ("second", "seconds"),
    "min": ("minute", "minutes"), "h": ("hour", "hours"), "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "Hz": ("hertz", "hertz"), "kHz": ("kilohertz", "kilohertz"),
    "MHz": ("megahertz", "megahertz"), "GHz": ("gigahertz", "gigahertz"),
    "KB": ("kilobyte", "kilobytes"), "kB": ("kilobyte", "kilobytes"),
    "MB": ("megabyte", "megabytes"), "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"), "PB": ("petabyte", "petabytes"),
    "Mbps": ("megabit per second", "megabits per second"),
    "Gbps": ("gigabit per second", "gigabits per second"),
    "W": ("watt", "watts"), "kW": ("kilowatt", "kilowatts"),
    "kWh": ("kilowatt hour", "kilowatt hours"), "V": ("volt", "volts"),
    "mAh": ("milliamp hour", "milliamp hours"), "dB": ("decibel", "decibels"),
    "fps": ("frame per second", "frames per second"), "px": ("pixel", "pixels"),
}
_UNIT_RE = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))

_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_ROMAN_RE = (  # a valid numeral up to 3999; single letters only I, V, X ("Part C" is a letter)
    r"(?=[IVXLCDM]{2,}\b|[IVX]\b)M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
)
_COUNTED_CONTEXT = (
    r"World War|Chapter|Part|Volume|Vol\.|Book|Act|Scene|Section|Phase|Article|Episode"
    r"|Season|Round|Level|Stage|Super Bowl|Apollo|Psalm|Title"
)
_TITLES = r"King|Queen|Pope|Emperor|Empress|Tsar|Czar|Kaiser|Sultan|Prince|Princess|Duke"
_REGNAL_NAMES = (
    r"Henry|Edward|George|Louis|Elizabeth|Charles|James|William|Richard|John|Mary|Philip"
    r"|Frederick|Peter|Ivan|Alexander|Nicholas|Leo|Pius|Benedict|Gregory|Innocent|Paul"
    r"|Clement|Urban|Boniface|Ramesses|Ramses|Napoleon|Catherine|Constantine|Otto"
    r"|Alfonso|Ferdinand|Carlos|Felipe|Gustav|Harald|Olav|Haakon|Christian|Wilhelm|Ludwig"
)

# Words after which a 4-digit number is a year (see _year_rules).
_YEAR_CONTEXT = (
    r"in|since|by|until|till|from|of|year|circa|ca\.|c\.|before|after|during|around"
    r"|early|late|mid|spring|summer|autumn|fall|winter|class of|Q[1-4]|FY|" + _MONTH_RE
)

# Acronyms espeak reads as words where they should be letters (measured: "I use AWS"
# gave ɔːz), and acronyms that are words, whose plurals must not be spelled out.
_SPELL_OUT = {"AWS"}
# Capitalized words that usually start a sentence: "Plan B. Then ..." keeps its period,
# while "George W. Bush" loses it (espeak would end the clause at "W.").
_SENTENCE_STARTERS = (
    r"(?:The|Then|This|That|These|Those|There|It|Its|We|He|She|They|You|I|A|An|And|But|So"
    r"|If|In|On|At|As|My|Our|His|Her|Their|What|When|Why|How|Who|Now|Yes|No)"
)
_WORD_ACRONYMS = {
    "NASA", "NATO", "RAM", "ROM", "LAN", "WAN", "SIM", "PIN", "GIF", "JPEG", "LASER",
    "RADAR", "SCUBA", "UNESCO", "UNICEF", "OPEC", "FIFA",
}


# ---------------------------------------------------------------------------------------
# Cleaning (language-agnostic; also used by text_checks)
# ---------------------------------------------------------------------------------------

_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>", re.S)
_PHONEME_BLOCK = re.compile(r"\[\[|\]\]")  # piper reads [[ ... ]] as raw phonemes
_INVISIBLE = {"Cc", "Cf", "Co", "Cs", "Cn"}
# CJK ideographs and CJK punctuation (full-width ，！？；：（）), not full-width Latin.
_CJK = (
    "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uff01\uff08\uff09\uff0c\uff1a\uff1b\uff1f"
)


def clean_text(text: str) -> str:
    """Strip markup and invisible characters; keep the words.

    Removes HTML/SSML-like tags (their inner text stays), HTML entities (``&amp;`` → &),
    control, format (zero-width, bidi, BOM, soft hyphen), private-use and unassigned
    characters, and piper's ``[[ ]]`` raw-phoneme brackets, then collapses whitespace
    (line breaks are kept, one per run, since they end sentences; spaces between CJK
    characters are dropped). Language-agnostic: nothing English-specific happens here.
    """
    text = _TAG.sub(" ", html.unescape(text))
    text = _PHONEME_BLOCK.sub(" ", text)
    text = "".join(
        ch for ch in text if ch in "\t\n\r" or unicodedata.category(ch) not in _INVISIBLE
    )
    text = re.sub(r"[^\S\n]+", " ", text)  # spaces, tabs, NBSP ... → one space
    text = re.sub(r"\s*\n\s*", "\n", text).strip()  # newlines kept: they end sentences
    text = re.sub(rf"(?<=[{_CJK}]) (?=[{_CJK}])", "", text)  # "世界 <b>你好</b>" → no space
    return re.sub(r" +([,.!?;:%)\]}。，！？；：、])", r"\1", text)


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

def _c(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_RULES: list[Rule] = [
    # -- URLs and e-mail first: they hold dots, digits, slashes and "@".
    # (left edges and possessive groups keep these linear on long dotted tokens)
    (_c(r"(?<![\w.+-])[\w.+-]++@[\w-]+(?:\.[\w-]+)+\b"), _url),
    (_c(r"\b(?:https?://|ftp://|www\.)[^\s<>\"']+[^\s<>\"'.,;:!?)]", re.I), _url),
    (_c(r"(?<![\w.@/-])(?:[\w-]++\.)++(?:com|org|net|io|dev|ai|gov|edu)\b"
        r"(?:/[^\s<>\"']*[^\s<>\"'.,;:!?)])?"), _url),
    # -- Phone numbers before ranges: "(555) 123-4567", "555-123-4567", "555-1234".
    (_c(r"(?<![\w-])\(?(\d{3})\)?[ .-](\d{3})[.-](\d{4})(?![\w-])"), _phone),
    (_c(r"(?<![\w-])(\d{3})-(\d{4})(?![\w-])"), _phone),
    # -- Dates before ranges and fractions: ISO, US m/d/y, then month names.
    (_c(r"(?<![\w-])(\d{4})-(\d{2})-(\d{2})(?![\w-])"), _iso_date),
    (_c(r"(?<![\w/])(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})(?![\w/])"), _numeric_date),
    (_c(rf"\b(?P<month>{_MONTH_RE})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b"
        r"(?:,?\s+(?P<year>\d{4})\b)?"), _month_day),
    (_c(rf"{_B}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<month>{_MONTH_RE})\b\.?"
        r"(?:,?\s+(?P<year>\d{4})\b)?"), _day_month),
    # -- Times: "10:30", "10:30:15 pm", "7 p.m." (before ranges: "9-5" is not a time).
    (_c(r"(?<![\w:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([ap]\.m\.|[ap]m\b|[AP]M\b))?"
        r"(?![\w:])", re.I), _clock),
    (_c(r"(?<![\w:.])(\d{1,2})\s*([ap]\.m\.|[ap]m\b)", re.I), _hour_ampm),
    # -- Money: symbol or code, optional range and scale ("$5-10", "$2.5 million").
    (_c(rf"(?P<neg>-)?(?P<sym>[$€£¥])\s?(?P<val>{NUM})(?:\s?(?:-|–|to)\s?[$€£¥]?"
        rf"(?P<upper>{NUM}))?(?:\s?(?P<scale>thousand|million|billion|trillion"
        r"|[kKmMbB]n?|tn)\b)?(?P<code>)"), _money),
    (_c(rf"{_B}(?P<neg>)(?P<sym>)(?P<val>{NUM})(?P<upper>)(?P<scale>)\s?(?P<code>USD|EUR|GBP|JPY)"
        r"\b"), _money),
    (_c(rf"(?P<neg>)(?P<sym>)(?P<code>USD|EUR|GBP|JPY)\s?(?P<val>{NUM})(?P<upper>)(?P<scale>)"
        r"(?![\w.,]\d)"), _money),
    # -- Numeric ranges "3-5", "10–20%": the dash becomes "to", digits stay for later rules.
    (_c(rf"{_B}({NUM})(?:-|\s?–\s?)({NUM})(?![\d-])"), _range),
    # -- Percent and units, after ranges so "10 to 20%" reads "ten to twenty percent".
    (_c(rf"{_B}(-?{NUM})\s?%"), lambda m: f"{number(m.group(1))} percent"),
    (_c(rf"{_B}(-?{NUM})\s?({_UNIT_RE})(?![\w/²³])"), _unit),
    (_c(rf"{_B}({NUM})x\b"), lambda m: f"{number(m.group(1))} times"),
    # -- Fractions "3/4" (dates are gone by now); small denominators only.
    (_c(r"(?<![\w/.])(\d{1,2})/([2-9]|1[0-2])(?![\w/]|\.\d)"), _fraction),
    # -- Ordinals "1st", "22nd", "1,000th"; decades "1990s", "'80s".
    (_c(rf"{_B}(\d{{1,3}}(?:,\d{{3}})+|\d{{1,18}})(?:st|nd|rd|th)\b", re.I),
     lambda m: ordinal(int(m.group(1).replace(",", "")))),
    (_c(r"(?<![\w.,])'?(1[1-9]\d0|20\d0|[1-9]0)'?s\b"), _decade),
    # -- Roman numerals, only after words that announce them.
    (_c(rf"\b({_COUNTED_CONTEXT})\s+({_ROMAN_RE})\b"), _roman_counted),
    (_c(rf"\b(?P<name>(?P<title>(?:{_TITLES})\s+[A-Z][a-z]+)|{_REGNAL_NAMES})\s+"
        rf"(?P<num>{_ROMAN_RE})\b"), _roman_regnal),
    # -- Years: after a year word ("in 1999", "since 2026", "May 2020"), before AD/BC, or
    #    a 1100-2099 number standing alone at the start or end of a clause.
    (_c(rf"\b((?i:{_YEAR_CONTEXT}))\s+(\d{{4}})\b(?![.,]\d)"), _year_match),
    (_c(r"(?<![\w.,])(\d{3,4})\s?(AD|BC|BCE|CE|A\.D\.|B\.C\.)(?!\w)"),
     lambda m: f"{year(int(m.group(1)))} {m.group(2).replace('.', '')}"),
    (_c(rf"(?:^|(?<=[.!?;:]\s)|(?<=[(\"]))({_YEARISH})\b(?![.,]\d)"),
     lambda m: year(int(m.group(1)))),
    (_c(rf"(?<![\w.,$-])({_YEARISH})(?=\s*(?:[.,;:!?)\"]|$))(?![.,]\d)"),
     lambda m: year(int(m.group(1)))),
    # -- Abbreviations (periods would end espeak's clause: "Dr." → "dˈɑːktɚ." | ...).
    (_c(r"\be\.\s?g\.", re.I), "for example"),
    (_c(r"\bPh\.\s?D\."), _abbrev("PhD", can_end=True)),
    (_c(r"\bi\.\s?e\.", re.I), "that is"),
    (_c(r"\ba\.k\.a\.", re.I), "also known as"),
    (_c(r"\betc\.", re.I), _abbrev("et cetera", can_end=True)),
    (_c(r"\bvs\.?(?=\s)", re.I), "versus"),
    (_c(r"\bapprox\.", re.I), "approximately"),
    (_c(r"\bca\.(?=\s)"), "circa"),
    (_c(r"\bcf\.", re.I), "compare"),
    (_c(r"\bNo\.\s?(?=\d)|\bno\.\s?(?=\d)"), "number "),
    (_c(r"\bNos\.\s?(?=\d)"), "numbers "),
    (_c(r"\b[Pp]p\.\s?(?=\d)"), "pages "),
    (_c(r"\b[Pp]\.\s?(?=\d)"), "page "),
    (_c(r"\bFigs?\.\s?(?=\d)"), "Figure "),
    (_c(r"\bDr\.(?=\s|$)"), "Doctor"),
    (_c(r"\bMr\.(?=\s|$)"), "Mister"),
    (_c(r"\bMrs\.(?=\s|$)"), "Missus"),
    (_c(r"\bMs\.(?=\s|$)"), "Miz"),
    (_c(r"\bProf\.(?=\s|$)"), "Professor"),
    (_c(r"\bRev\.(?=\s)"), "Reverend"),
    (_c(r"\bCapt\.(?=\s)"), "Captain"),
    (_c(r"\bGen\.(?=\s[A-Z])"), "General"),
    (_c(r"\bLt\.(?=\s)"), "Lieutenant"),
    (_c(r"\bSgt\.(?=\s)"), "Sergeant"),
    (_c(r"\bMt\.(?=\s)"), "Mount"),
    (_c(r"\bSt\.(?=\s|$)"), _saint_or_street),
    (_c(r"\bAve\.(?=\s|$)"), _abbrev("Avenue", can_end=True)),
    (_c(r"\bRd\.(?=\s|$)"), _abbrev("Road", can_end=True)),
    (_c(r"\bBlvd\.(?=\s|$)"), _abbrev("Boulevard", can_end=True)),
    (_c(r"\bJr\.(?=\s|$|,)"), _abbrev("Junior", can_end=True)),
    (_c(r"\bSr\.(?=\s|$|,)"), _abbrev("Senior", can_end=True)),
    (_c(r"\bInc\.(?=\s|$|,)"), _abbrev("Incorporated", can_end=True)),
    (_c(r"\bLtd\.(?=\s|$|,)"), _abbrev("Limited", can_end=True)),
    (_c(r"\bCorp\.(?=\s|$|,)"), _abbrev("Corporation", can_end=True)),
    (_c(r"\bCo\.(?=\s|$|,)"), _abbrev("Company", can_end=True)),
    (_c(r"\bDept\.(?=\s|$|,)"), _abbrev("Department", can_end=True)),
    # -- Acronyms: dotted "U.S." → "US"; plurals "GPUs" → "G-P-U's"; measured misreads.
    (_c(r"(?<![\w.])(?:[A-Za-z]\.){2,}(?![\w])"), _dotted_acronym),
    (_c(r"(?<![\w.])(?:[A-Z]\.\s){2,}(?=[A-Z][a-z])"), lambda m: m.group(0).replace(".", "")),
    (_c(rf"(?<![\w.])([A-Z])\.(?=\s(?!{_SENTENCE_STARTERS}\b)[A-Z][a-z])"), r"\1"),
    (_c(r"\b([A-Z]{2,5})'?s\b"), _acronym_plural),
    (_c(r"\b(" + "|".join(sorted(_SPELL_OUT)) + r")\b"), lambda m: "-".join(m.group(1))),
    # -- Symbols with a number: "#1" → "number one", "+5" → "plus five".
    (_c(r"#\s?(?=\d)"), "number "),
    (_c(r"#(?=[A-Za-z])"), "hashtag "),
    (_c(r"(?<![\w+])\+(?=\d)"), "plus "),
    # -- Letters glued to digits ("MP3", "COVID-19", "5G"): split so each part is read.
    (_c(r"(?<=[A-Za-z])-?(?=\d)|(?<=\d)(?=[A-Za-z])"), " "),
    # -- Negative numbers, dotted versions ("1.2.3"), then every remaining number.
    (_c(r"(?<![\w.,])-(?=\.?\d)"), "minus "),
    (_c(r"(?<![\w.,])\d+(?:\.\d+){2,}(?![\w])"),
     lambda m: " point ".join(number(p) for p in m.group(0).split("."))),
    (_c(rf"{NUM}|(?<!\d)\.\d+"), _number_token),
    # -- Remaining symbols.
    (_c(r"\s*&\s*"), " and "),
    (_c(r"\s*\+\s*"), " plus "),
    (_c(r"\s*=\s*"), " equals "),
    (_c(r"\s*@\s*"), " at "),
    (_c(r"%"), " percent "),
    (_c(r"°"), " degrees "),
    (_c(r"\s<=?\s"), lambda m: " less than or equal to " if "=" in m.group(0) else " less than "),
    (_c(r"\s>=?\s"),
     lambda m: " greater than or equal to " if "=" in m.group(0) else " greater than "),
    (_c(r"[~≈]\s*"), "about "),
    (_c(r"(?<=\w)/(?=\w)"), " "),  # "and/or" → "and or"
    (_c(r"\s*[—–]\s*|\s+-+\s+|\s*--+\s*"), ", "),  # dashes used as pauses
    (_c(r"[\[\]{}|]"), ", "),
    (_c(r"[*_^\\<>#/~`]"), " "),
]


def _tidy(text: str) -> str:
    """Collapse whitespace, drop spaces before punctuation and repeated commas."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r" +([,.!?;:)])", r"\1", text)
    text = re.sub(r"([(]) +", r"\1", text)
    text = re.sub(r",(\s*,)+", ",", text)
    return re.sub(r"^[,\s]+|(?<=[.!?;:])\s*,", "", text).strip()


def normalize_en(text: str) -> str:
    """English text → plain words for espeak: numbers, dates, times, money, units,
    abbreviations, acronym plurals, roman numerals (in context), URLs and symbols.

    Years: a 4-digit number is read as a year ("nineteen ninety-nine", "two thousand
    five", "twenty twenty-six") when a year word precedes it (in, since, by, from, until,
    of, during, month names ...), when AD/BC follows, when it is part of a range of two
    such years ("1999-2005"), or when a number 1100-2099 stands alone at the start or
    end of a clause ("It was 1999.", "1999 was ..."). Elsewhere it is a count
    ("1500 people" → "one thousand five hundred people"): a number followed by a noun is
    far more often a quantity, and misreading a year as a count stays intelligible.
    """
    text = _normalize_unicode(clean_text(text))
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return _tidy(text)
