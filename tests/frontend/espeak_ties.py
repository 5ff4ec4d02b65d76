"""The reference the Kokoro G2P tests compare with: espeak-ng asked for tie marks, as misaki's
espeak G2P (Kokoro's own pipeline) asks phonemizer, then misaki's pair table applied to the
tied pairs only. Moved here from the retired bench/kokoro_lang_chain.py (2026-12-07), whose
findings are in docs/kokoro.md; its 20 sentences per language are
``tests/fixtures/kokoro_langs.json``."""

from __future__ import annotations

import ctypes
import os
import re
import unicodedata

# misaki's espeak G2P (misaki/espeak.py, EspeakG2P.E2M): tied pairs → one symbol
MISAKI_E2M = (("a^ɪ", "I"), ("a^ʊ", "W"), ("d^z", "ʣ"), ("d^ʒ", "ʤ"), ("e^ɪ", "A"),
              ("o^ʊ", "O"), ("ə^ʊ", "Q"), ("s^s", "S"), ("t^s", "ʦ"), ("t^ʃ", "ʧ"),
              ("ɔ^ɪ", "Y"))


class TiedEspeak:
    """espeak-ng (piper's bundled build) asked for IPA with ``^`` between the letters of
    one phoneme, as misaki asks phonemizer for it; per clause, the clause's punctuation
    put back from the text."""

    def __init__(self) -> None:
        import piper
        from piper.phonemize_espeak import EspeakPhonemizer

        EspeakPhonemizer()  # initializes the library with piper's data
        self.lib = ctypes.CDLL(os.path.join(os.path.dirname(piper.__file__),
                                            "espeakbridge.so"))
        self.lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        self.lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                                   ctypes.c_int, ctypes.c_int]
        self.lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]

    def __call__(self, text: str, voice: str) -> str:
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise ValueError(f"no espeak-ng voice {voice}")
        out = []
        for clause, mark in re.findall(r"([^.,;:!?]+)([.,;:!?]*)", text):
            buf = ctypes.create_string_buffer(clause.encode())
            ptr = ctypes.c_void_p(ctypes.addressof(buf))
            words = []
            while ptr.value:
                words.append(self.lib.espeak_TextToPhonemes(
                    ctypes.byref(ptr), 1, 0x02 | 0x80 | (ord("^") << 8)).decode())
            out.append(" ".join(w for w in words if w).strip() + mark.strip())
        return " ".join(o for o in out if o)


def misaki_phonemes(tied: str) -> str:
    s = tied
    for a, b in MISAKI_E2M:
        s = s.replace(a, b)
    s = s.replace("^", "").replace("-", "")
    # misaki passes espeak's output as it comes; the vocabulary holds the combining tilde
    return "".join(unicodedata.normalize("NFD", c) if "\u0303" in unicodedata.normalize(
        "NFD", c) else c for c in s)
