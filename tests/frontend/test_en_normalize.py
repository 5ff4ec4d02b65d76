"""Golden tests for English text normalization (exact expected strings)."""

import pytest

from cosyvoice.frontend.clean import clean_text
from cosyvoice.frontend.en_normalize import normalize_en as _normalize_en
from cosyvoice.frontend.en_numbers import cardinal, fraction, ordinal, year


def normalize_en(text: str) -> str:
    """The frontend's pass for English: clean once, then normalize."""
    return _normalize_en(clean_text(text))

GOLDEN = [
    # cardinals, negatives, decimals
    ("I have 1,234,567 apples.",
     "I have one million two hundred thirty-four thousand five hundred sixty-seven apples."),
    ("It is -5 outside.", "It is minus five outside."),
    ("Pi is 3.14.", "Pi is three point one four."),
    ("I have 2 cats and 0 dogs.", "I have two cats and zero dogs."),
    ("It is .5 or 3.0 or 100,000.",
     "It is point five or three point zero or one hundred thousand."),
    ("Agent 007 has 1,2,3.", "Agent zero zero seven has one, two, three."),
    ("We sold 1500 units.", "We sold one thousand five hundred units."),
    ("Version 1.2.3 is out.", "Version one point two point three is out."),
    # ordinals
    ("He came 1st, she 22nd, and they 103rd.",
     "He came first, she twenty-second, and they one hundred third."),
    ("The 1,000th visitor came 2nd.", "The one thousandth visitor came second."),
    ("My 11th and 12th and 21st tries.", "My eleventh and twelfth and twenty-first tries."),
    # years
    ("It was 1999.", "It was nineteen ninety-nine."),
    ("In 2005 we moved.", "In two thousand five we moved."),
    ("Since 2026 things changed.", "Since twenty twenty-six things changed."),
    ("The year 1066 was famous.", "The year ten sixty-six was famous."),
    ("1999 was a great year.", "nineteen ninety-nine was a great year."),
    ("By 2030 and in 1900 and in 1905.",
     "By twenty thirty and in nineteen hundred and in nineteen oh five."),
    ("Born in May 2020.", "Born in May twenty twenty."),
    ("From 1999-2005 we grew.", "From nineteen ninety-nine to two thousand five we grew."),
    ("The 2020-21 season.", "The twenty twenty to twenty-one season."),
    ("Rome fell in 476 AD.", "Rome fell in four hundred seventy-six AD."),
    ("Q3 2024 results.", "Q three twenty twenty-four results."),
    ("In the 1990s and the '80s.", "In the nineteen nineties and the eighties."),
    # currency
    ("It costs $12.50 today.", "It costs twelve dollars and fifty cents today."),
    ("Only $1.", "Only one dollar."),
    ("Pay €5 now.", "Pay five euros now."),
    ("It was £3.20.", "It was three pounds and twenty pence."),
    ("That is ¥100.", "That is one hundred yen."),
    ("They raised $2.5 million.", "They raised two point five million dollars."),
    ("It costs $0.99.", "It costs ninety-nine cents."),
    ("Just £0.01 or $1.01.", "Just one penny or one dollar and one cent."),
    ("Costs $5-10 each.", "Costs five to ten dollars each."),
    ("A $5k bonus.", "A five thousand dollars bonus."),
    ("Tickets cost USD 5 or 5 EUR.", "Tickets cost five dollars or five euros."),
    ("We lost -$20.", "We lost minus twenty dollars."),
    # percentages
    ("Scored 98% and 12.5%.", "Scored ninety-eight percent and twelve point five percent."),
    ("A 10-20% gain.", "A ten to twenty percent gain."),
    # dates
    ("On December 2, 2026 we launch.", "On December second, twenty twenty-six we launch."),
    ("Date: 12/02/2026.", "Date: December second, twenty twenty-six."),
    ("ISO 2026-12-02 works.", "ISO December second, twenty twenty-six works."),
    ("On 25/12/2025 it snowed.", "On December twenty-fifth, twenty twenty-five it snowed."),
    ("He was born on 4 July 1976.", "He was born on the fourth of July, nineteen seventy-six."),
    ("On Jan. 5th we met.", "On January fifth we met."),
    ("Sept 11, 2001 was sad.", "September eleventh, two thousand one was sad."),
    # times
    ("Meet at 10:30.", "Meet at ten thirty."),
    ("Meet at 10:30 am.", "Meet at ten thirty AM."),
    ("Dinner at 7 p.m.", "Dinner at seven PM."),
    ("Dinner at 7 p.m. tomorrow.", "Dinner at seven PM tomorrow."),
    ("Train at 14:05.", "Train at fourteen oh five."),
    ("Call at 10:00.", "Call at ten o'clock."),
    ("Wake at 10am or 12 PM.", "Wake at ten AM or twelve PM."),
    ("It was 9:05 AM.", "It was nine oh five AM."),
    ("Lunch at 13:00.", "Lunch at thirteen hundred."),
    # ranges and fractions
    ("Read pages 3-5.", "Read pages three to five."),
    ("Ages 6–12 welcome.", "Ages six to twelve welcome."),
    ("1/2 of 3/4 is 3/8.", "one half of three quarters is three eighths."),
    ("Open 24/7.", "Open twenty-four seven."),
    # units
    ("Run 5 km today.", "Run five kilometers today."),
    ("Lift 3kg.", "Lift three kilograms."),
    ("It is 20°C.", "It is twenty degrees Celsius."),
    ("Temperatures of -3°C.", "Temperatures of minus three degrees Celsius."),
    ("Drive 100 mph.", "Drive one hundred miles per hour."),
    ("Use 5 GB.", "Use five gigabytes."),
    ("A 2.5 GHz CPU.", "A two point five gigahertz CPU."),
    ("Is it 1 km or 1.5 km?", "Is it one kilometer or one point five kilometers?"),
    ("Speed is 30 km/h.", "Speed is thirty kilometers per hour."),
    ("It is 90° and 5-10 kg.", "It is ninety degrees and five to ten kilograms."),
    ("A 4x speedup.", "A four times speedup."),
    ("An area of 12 m².", "An area of twelve square meters."),
    # abbreviations
    ("Dr. Smith and Mr. Jones met Mrs. Brown.", "Doctor Smith and Mister Jones met Missus Brown."),
    ("St. Louis is on Main St.", "Saint Louis is on Main Street."),
    ("In St. Louis, visit St. Mary's on Baker St. Then rest.",
     "In Saint Louis, visit Saint Mary's on Baker Street. Then rest."),
    ("Fruit, e.g. apples, i.e. food, etc.", "Fruit, for example apples, that is food, et cetera."),
    ("Fruit, i.e., apples.", "Fruit, that is, apples."),
    ("Team A vs. team B.", "Team A versus team B."),
    ("See No. 5.", "See number five."),
    ("See p. 5 and pp. 10-12.", "See page five and pages ten to twelve."),
    ("Smith Jr. said hi.", "Smith Junior said hi."),
    ("Dr. Who is a Ph.D.", "Doctor Who is a PhD."),
    ("Apples etc. Then pears.", "Apples et cetera. Then pears."),
    # symbols
    ("Tom & Jerry.", "Tom and Jerry."),
    ("1 + 1 = 2", "one plus one equals two"),
    ("Email me @ noon.", "Email me at noon."),
    ("We are #1.", "We are number one."),
    ("C++ and/or Java.", "C plus plus and or Java."),
    ("x < y and 5 > 3.", "x less than y and five greater than three."),
    ("About ~5 left.", "About about five left."),
    # acronyms
    ("The GPU and API are fast.", "The GPU and API are fast."),
    ("GPUs and CPUs.", "G-P-U's and C-P-U's."),
    ("Ask NASA about RAMs.", "Ask NASA about RAMs."),
    ("I use AWS.", "I use A-W-S."),
    ("He lives in the U.S.", "He lives in the US."),
    ("The U.S. Army.", "The US Army."),
    ("COVID-19 and MP3 and 5G.", "COVID nineteen and MP three and five G."),
    ("J. K. Rowling and George W. Bush.", "J K Rowling and George W Bush."),
    ("We chose plan B. Then we left.", "We chose plan B. Then we left."),
    # roman numerals in safe contexts only
    ("World War II ended.", "World War two ended."),
    ("Read Chapter IV now.", "Read Chapter four now."),
    ("Henry VIII had wives.", "Henry the Eighth had wives."),
    ("Louis XIV and Elizabeth I.", "Louis the Fourteenth and Elizabeth the First."),
    ("King Charles III reigned.", "King Charles the Third reigned."),
    ("Super Bowl LVIII was fun.", "Super Bowl fifty-eight was fun."),
    ("Mary I went home.", "Mary I went home."),
    ("Part C is here.", "Part C is here."),
    ("I like Vitamin C and MIX.", "I like Vitamin C and MIX."),
    # URLs, e-mail, phone numbers
    ("Visit https://www.example.com/docs now.",
     "Visit w w w dot example dot com slash docs now."),
    ("Mail john.smith@example.com today.", "Mail john dot smith at example dot com today."),
    ("See github.com/user2 please.", "See github dot com slash user two please."),
    ("Call 555-123-4567.", "Call five five five, one two three, four five six seven."),
    ("Call (555) 123-4567.", "Call five five five, one two three, four five six seven."),
    # unicode, whitespace, markup
    ("“Hello” — she said… ‘fine’.", "\"Hello\", she said... 'fine'."),
    ("Too   many \t spaces\n\nhere.", "Too many spaces here."),
    ("<b>Bold</b> text<break time=\"1s\"/> here &amp; there.", "Bold text here and there."),
    ("zero\u200bwidth\u00adsoft", "zerowidthsoft"),
    ("Raw [[ phonemes ]] stripped.", "Raw phonemes stripped."),
    ("Full-width ５ and ①.", "Full-width five and one."),
]


@pytest.mark.parametrize(("text", "expected"), GOLDEN, ids=[t for t, _ in GOLDEN])
def test_normalize_golden(text: str, expected: str) -> None:
    assert normalize_en(text) == expected


def test_golden_has_enough_cases() -> None:
    assert len(GOLDEN) >= 60


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "zero"),
        (13, "thirteen"),
        (40, "forty"),
        (105, "one hundred five"),
        (1000, "one thousand"),
        (1001, "one thousand one"),
        (90_000_019, "ninety million nineteen"),
        (-7, "minus seven"),
        (10**18, "one zero zero zero zero zero zero zero zero zero zero zero zero zero zero "
                 "zero zero zero zero"),
    ],
)
def test_cardinal(n: int, expected: str) -> None:
    assert cardinal(n) == expected


@pytest.mark.parametrize(
    ("n", "expected"),
    [(1, "first"), (3, "third"), (12, "twelfth"), (20, "twentieth"), (99, "ninety-ninth"),
     (100, "one hundredth"), (1_000_002, "one million second")],
)
def test_ordinal(n: int, expected: str) -> None:
    assert ordinal(n) == expected


@pytest.mark.parametrize(
    ("n", "expected"),
    [(1999, "nineteen ninety-nine"), (2005, "two thousand five"), (2026, "twenty twenty-six"),
     (2000, "two thousand"), (1900, "nineteen hundred"), (1905, "nineteen oh five"),
     (2010, "twenty ten"), (999, "nine hundred ninety-nine")],
)
def test_year(n: int, expected: str) -> None:
    assert year(n) == expected


@pytest.mark.parametrize(
    ("num", "den", "expected"),
    [(1, 2, "one half"), (3, 2, "three halves"), (1, 4, "one quarter"),
     (2, 3, "two thirds"), (1, 10, "one tenth")],
)
def test_fraction(num: int, den: int, expected: str) -> None:
    assert fraction(num, den) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<p>Hi <i>there</i></p>", "Hi there"),
        ("a\x00b\x07c", "abc"),
        ("\ufeffBOM\u200d joined", "BOM joined"),
        ("line one\r\n\r\n  line two", "line one\nline two"),
        ("3 < 5 and 6 > 4", "3 < 5 and 6 > 4"),
        ("&lt;script&gt;alert(1)&lt;/script&gt;", "alert(1)"),
        ("你好，<b>世界</b>。", "你好，世界。"),
        ("你好 世界 and GPU 很快", "你好世界 and GPU 很快"),
        ("Ｈｅｌｌｏ Ｗｏｒｌｄ", "Ｈｅｌｌｏ Ｗｏｒｌｄ"),
        ("<!-- note -->Text", "Text"),
    ],
)
def test_clean_text(text: str, expected: str) -> None:
    assert clean_text(text) == expected


def test_normalized_output_has_no_digits_or_markup() -> None:
    text = "On 12/02/2026 at 10:30, Dr. <b>Lee</b> paid $1,234.56 for 3 GPUs (#2) & 5 kg."
    out = normalize_en(text)
    assert not any(ch.isdigit() for ch in out)
    assert not set(out) & set("<>#&$[]")
