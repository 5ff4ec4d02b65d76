"""Golden G2P for Kokoro: espeak-ng IPA rewritten into misaki's English symbols, and
misaki[zh]'s Mandarin phonemes, exact strings."""

from __future__ import annotations

import json

import pytest

from cosyvoice.frontend.kokoro_g2p import KokoroG2P, espeak_to_misaki
from cosyvoice.tools.setup_kokoro import load_manifest


@pytest.fixture(scope="module")
def g2p() -> KokoroG2P:
    return KokoroG2P()


@pytest.mark.parametrize("ipa, accent, expected", [
    # diphthongs and affricates become one letter; American length marks go, ɜː gets its r
    ("həlˈoʊ wˈɜːld", "en-us", "həlˈO wˈɜɹld"),
    ("dʒˈɔɪ tʃˈɜːtʃ", "en-us", "ʤˈY ʧˈɜɹʧ"),
    ("wˈɔːɾɚ", "en-us", "wˈɔTəɹ"),  # the flap as T, ɚ as əɹ
    ("bˈʌʔn̩", "en-us", "bˈʌʔn"),  # glottal stop + syllabic n
    ("nˈeɪʃən", "en-gb", "nˈAʃən"),
    ("hˈəʊm", "en-gb", "hˈQm"),  # British GOAT
    ("kˈat bˈed", "en-gb", "kˈæt bˈɛd"),  # British TRAP and DRESS
    ("bˈɑːθ", "en-gb", "bˈɑːθ"),  # British length kept
])
def test_espeak_ipa_becomes_misaki_symbols(ipa, accent, expected):
    assert espeak_to_misaki(ipa, accent) == expected


@pytest.mark.parametrize("text, accent, expected", [
    ("Hello, world! How are you today?", "en-us", "həlˈO, wˈɜɹld! hˌW ɑɹ ju tədˈA?"),
    ("The birch canoe slid on the smooth planks.", "en-us",
     "ðə bˈɜɹʧ kənˈu slˈɪd ɔnðə smˈuð plˈæŋks."),
    ("I bought a beautiful water bottle.", "en-us", "I bˈɔt ə bjˈuTifəl wˈɔTəɹ bˈɑTəl."),
    ("Go home, Bob.", "en-gb", "ɡˌQ hˈQm, bˈɒb."),
    ("The birch canoe slid on the smooth planks.", "en-gb",
     "ðə bˈɜːʧ kənˈuː slˈɪd ɒnðə smˈuːð plˈæŋks."),
])
def test_english_sentences(g2p, text, accent, expected):
    assert g2p(text, accent) == expected


@pytest.mark.parametrize("text, expected", [
    ("今天天气很好。", "ʨi→ntʰjɛ→ntʰjɛ→nʨʰi↘ xə↓n xau↓."),
    # 一 before a third tone reads as a falling tone (i↘): misaki's tone sandhi
    ("我们一起去公园散步，好吗？", "wo↓mən i↘ʨʰi↓ ʨʰy↘ kʊ→ŋɥɛ↗n sa↘npu↘, xau↓ ma?"),
    ("请把桌子上的杯子递给我。", "ʨʰi↓ŋ pa↓ ꭧwo→ʦɨ ʂa↘ŋ tɤ pei→ʦɨ ti↘kei↓ wo↓."),
    ("他有三本书。", "tʰa→ jou↓ sa→n pə↓nʂu→."),
])
def test_mandarin_sentences(g2p, text, expected):
    assert g2p(text, "zh") == expected


@pytest.mark.parametrize("text, accent", [
    ("Measure the church's joy, then leave at nine o'clock.", "en-us"),
    ("Thoroughly rehearsed orchestras perform beautifully.", "en-gb"),
    ("这是一个关于友谊的故事，请你仔细听。", "zh"),
])
def test_every_symbol_is_in_kokoros_vocabulary(g2p, text, accent):
    from cosyvoice.assets import package_dir

    spec = load_manifest()["vocab"]
    vocab = json.loads((package_dir(spec["module"], "setup") / spec["source"]).read_text(
        "utf-8"))["vocab"]
    assert len(vocab) == spec["symbols"] == 114
    phonemes = g2p(text, accent)
    assert phonemes and not [c for c in phonemes if c not in vocab]
