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
"""

from __future__ import annotations

import threading
import unicodedata

ESPEAK_VOICES = {"en-us": "en-us", "en-gb": "en"}  # our accent → espeak-ng voice name
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


def espeak_to_misaki(ipa: str, accent: str = "en-us") -> str:
    """Rewrite espeak-ng IPA into misaki's symbols (see the module docstring)."""
    s = unicodedata.normalize("NFC", ipa)
    for table in (FIRST, AMERICAN if accent == "en-us" else BRITISH, LAST):
        for a, b in table:
            s = s.replace(a, b)
    return unicodedata.normalize("NFC", s)


class KokoroG2P:
    """Phonemizers for Kokoro, built on first use (misaki's Mandarin G2P loads jieba's
    dictionary, ~2 s). Safe to share between threads: each English call holds
    :data:`ESPEAK_LOCK` from ``set_voice`` to the phonemes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._espeak = None
        self._zh = None

    def __call__(self, text: str, language: str) -> str:
        """``language``: ``en-us``, ``en-gb`` or ``zh``."""
        if language == "zh":
            return self.mandarin(text)
        return self.english(text, language)

    def english(self, text: str, accent: str = "en-us") -> str:
        from piper.phonemize_espeak import EspeakPhonemizer

        with ESPEAK_LOCK:
            if self._espeak is None:
                self._espeak = EspeakPhonemizer()
            sentences = self._espeak.phonemize(ESPEAK_VOICES[accent], text)
        ipa = " ".join("".join(s).strip() for s in sentences if s)
        return espeak_to_misaki(ipa, accent)

    def mandarin(self, text: str) -> str:
        with self._lock:
            if self._zh is None:
                from misaki.zh import ZHG2P

                self._zh = ZHG2P()
            zh = self._zh
        phonemes, _ = zh(text)
        return phonemes.strip()
