"""G2P for Kokoro-82M: normalized text → a phoneme string in Kokoro's vocabulary.

Kokoro was trained on misaki's phonemes. English here comes from espeak-ng's IPA (the
data and bridge bundled with piper-tts, as the Piper backend uses them) rewritten into
misaki's symbols: diphthongs and affricates as one letter (``eɪ`` → ``A``, ``aɪ`` → ``I``,
``aʊ`` → ``W``, ``ɔɪ`` → ``Y``, American ``oʊ`` → ``O``, British ``əʊ`` → ``Q``, ``dʒ`` →
``ʤ``, ``tʃ`` → ``ʧ``), r-coloured vowels spelled with ``ɹ`` (``ɚ`` → ``əɹ``, American
``ɜː`` → ``ɜɹ``), the American flap as ``T``, the glottal stop kept (``ʔn``), length
marks dropped for American English and kept for British, syllabic ``n̩`` as ``ᵊn``.
Mandarin comes from misaki's own ``ZHG2P`` (``misaki[zh]``: jieba words, pypinyin, tone
sandhi, pinyin → IPA with tone arrows).

Spanish, French, Italian, Brazilian Portuguese and Hindi come from the same espeak-ng
(its own number reading included), rewritten as Kokoro's pipeline rewrites these
languages (misaki's espeak G2P): espeak's two-letter phonemes become one symbol (``ts`` →
``ʦ``, ``dz`` → ``ʣ``, ``tʃ`` → ``ʧ``, ``dʒ`` → ``ʤ``, ``aɪ`` → ``I``, ``aʊ`` → ``W``, ``eɪ``
→ ``A``, ``oʊ`` → ``O``, ``əʊ`` → ``Q``, ``ɔɪ`` → ``Y``, Italian long ``ss`` → ``S``) and
hyphens go. misaki reads these pairs from espeak's tie marks; piper's bridge gives no ties,
so the pairs are matched as letters (inside a word they are these phonemes; words are
separated by spaces) — except Italian ``aʊ``, which espeak writes as two phonemes
(checked against espeak's tied output on 100 sentences, tests/frontend/test_kokoro_g2p.py).
Two differences of the newer espeak-ng that piper bundles are undone: nasal vowels come
precomposed (``õ``, outside the vocabulary) and are decomposed into vowel + U+0303 (in
it), and the glide ``ʲ`` it writes after a vowel (``dʒˈiʲɐ``; the
espeak of Kokoro's training wrote ``ʤˈiɐ``) is dropped. Japanese comes from misaki's
own cutlet G2P (``misaki.cutlet``: fugashi with the unidic-lite dictionary, kana →
Kokoro's symbols, its own number reading), Kokoro's pipeline default for Japanese.
"""

from __future__ import annotations

import re
import threading
import unicodedata

# our language → espeak-ng voice name
ESPEAK_VOICES = {"en-us": "en-us", "en-gb": "en", "es": "es", "fr": "fr", "it": "it",
                 "pt-br": "pt-br", "hi": "hi"}
# espeak-ng's voice is process-global (set_voice, then get_phonemes): every caller in this
# process (this module and the Piper backend) holds this lock around the pair, so a British
# Kokoro request never switches the voice under a concurrent Piper one.
ESPEAK_LOCK = threading.Lock()

# espeak-ng IPA → misaki, applied in order: FIRST, the accent's table, then LAST.
FIRST = (
    ("ʔˌn̩", "ʔn"), ("ʔn̩", "ʔn"), ("n̩", "ᵊn"), ("l̩", "ᵊl"), ("m̩", "ᵊm"),
    ("aɪ", "I"), ("aʊ", "W"), ("eɪ", "A"), ("ɔɪ", "Y"), ("dʒ", "ʤ"), ("tʃ", "ʧ"),
)
AMERICAN = (
    ("oʊ", "O"), ("ɜːɹ", "ɜɹ"), ("ɜː", "ɜɹ"), ("ɑːɹ", "ɑɹ"), ("ɔːɹ", "ɔɹ"), ("oːɹ", "ɔɹ"),
    ("oː", "ɔ"), ("o", "ɔ"), ("ɾ", "T"), ("ː", ""),
)
BRITISH = (("əʊ", "Q"), ("oʊ", "Q"), ("eə", "ɛː"), ("iə", "ɪə"), ("ɾ", "t"), ("a", "æ"))
LAST = (
    ("ç", "k"), ("x", "k"), ("ɬ", "l"), ("r", "ɹ"), ("ʲ", ""), ("ɐ", "ə"),
    ("ᵻ", "ɪ"), ("ɚ", "əɹ"), ("e", "ɛ"),
)


# espeak-ng IPA → Kokoro for the other espeak languages (misaki's espeak G2P, see above).
PAIRS = (("aɪ", "I"), ("aʊ", "W"), ("dz", "ʣ"), ("dʒ", "ʤ"), ("eɪ", "A"), ("oʊ", "O"),
         ("əʊ", "Q"), ("ts", "ʦ"), ("tʃ", "ʧ"), ("ɔɪ", "Y"))
PAIRS_BY_LANGUAGE = {"it": (("ss", "S"),)}  # Italian's long s is one espeak phoneme
# pairs that this espeak-ng never ties in a language: two phonemes (Italian ``kˈaʊza``,
# ``aʊtˈunno``: a + ʊ; misaki keeps them apart; tests/frontend/test_kokoro_g2p.py)
UNTIED_BY_LANGUAGE = {"it": frozenset({"aʊ"})}
_TILDE = "\u0303"
_GLIDE_AFTER_VOWEL = re.compile(r"([aeiouyɐɑɒɔəɛɜɪʊʌæøœɨɯ]\u0303?ː?)ʲ")


def espeak_to_kokoro(ipa: str, language: str) -> str:
    """Rewrite espeak-ng IPA of ``language`` (es, fr, it, pt-br, hi) into Kokoro's symbols
    (see the module docstring)."""
    s = unicodedata.normalize("NFC", ipa)
    s = "".join(unicodedata.normalize("NFD", ch) if _TILDE in unicodedata.normalize(
        "NFD", ch) else ch for ch in s)
    s = _GLIDE_AFTER_VOWEL.sub(r"\1", s)
    untied = UNTIED_BY_LANGUAGE.get(language, frozenset())
    for a, b in (*PAIRS, *PAIRS_BY_LANGUAGE.get(language, ())):
        if a not in untied:
            s = s.replace(a, b)
    return s.replace("-", "")


def espeak_to_misaki(ipa: str, accent: str = "en-us") -> str:
    """Rewrite espeak-ng IPA into misaki's symbols (see the module docstring)."""
    s = unicodedata.normalize("NFC", ipa)
    for table in (FIRST, AMERICAN if accent == "en-us" else BRITISH, LAST):
        for a, b in table:
            s = s.replace(a, b)
    return unicodedata.normalize("NFC", s)


class KokoroG2P:
    """Phonemizers for Kokoro, built on first use (misaki's Mandarin G2P loads jieba's
    dictionary, ~2 s; the Japanese one unidic-lite's, ~0.3 s). Safe to share between
    threads: each espeak call holds :data:`ESPEAK_LOCK` from ``set_voice`` to the
    phonemes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._espeak = None
        self._zh = None
        self._ja = None
        self._ja_lock = threading.Lock()

    def __call__(self, text: str, language: str) -> str:
        """``language``: ``en-us``, ``en-gb``, ``zh``, ``ja`` or another key of
        :data:`ESPEAK_VOICES`."""
        if language == "zh":
            return self.mandarin(text)
        if language == "ja":
            return self.japanese(text)
        if language.startswith("en"):
            return self.english(text, language)
        return espeak_to_kokoro(self.ipa(text, language), language)

    def ipa(self, text: str, language: str) -> str:
        """espeak-ng's IPA of ``text`` read in ``language`` (sentences joined by spaces)."""
        from piper.phonemize_espeak import EspeakPhonemizer

        voice = ESPEAK_VOICES.get(language)
        if voice is None:
            raise ValueError(f"no espeak-ng voice for language {language!r}")
        with ESPEAK_LOCK:
            if self._espeak is None:
                self._espeak = EspeakPhonemizer()
            sentences = self._espeak.phonemize(voice, text)
        return " ".join("".join(s).strip() for s in sentences if s)

    def english(self, text: str, accent: str = "en-us") -> str:
        return espeak_to_misaki(self.ipa(text, accent), accent)

    def japanese(self, text: str) -> str:
        """misaki's cutlet G2P (fugashi + unidic-lite): Kokoro's Japanese phonemes. One
        call at a time: a MeCab tagger is not to be shared between threads (a sentence
        takes ~1 ms)."""
        with self._ja_lock:
            if self._ja is None:
                from misaki.cutlet import Cutlet

                self._ja = Cutlet()
            phonemes, _ = self._ja(text)
        return phonemes.strip()

    def mandarin(self, text: str) -> str:
        with self._lock:
            if self._zh is None:
                from misaki.zh import ZHG2P

                self._zh = ZHG2P()
            zh = self._zh
        phonemes, _ = zh(text)
        return phonemes.strip()
