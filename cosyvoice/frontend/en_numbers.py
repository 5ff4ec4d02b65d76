"""English number speller: cardinals, ordinals, years, fractions, digit strings.

American style without "and" inside numbers ("one hundred five"), matching espeak's own
reading of digits. Used by :mod:`cosyvoice.frontend.en_normalize`.
"""

from __future__ import annotations

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
