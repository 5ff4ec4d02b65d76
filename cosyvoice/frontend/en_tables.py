"""Patterns and word tables of English normalization (months, currencies, units, roman
numerals, year contexts, acronyms), read by :mod:`cosyvoice.frontend.en_normalize`'s rules.
"""

from __future__ import annotations

import re

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
