"""Where Spanish, French and Portuguese lose DNSMOS: each step of our Kokoro chain scored
on its own, on bench/kokoro_langs.py's 20 sentences per language.

    nice -n 5 .venv/bin/python -m bench.kokoro_lang_chain [--voices ef_dora ff_siwis ...]
        [--variants app raw ...] [--sentences 20]

Variants (DNSMOS P.835 OVRL/SIG/BAK, mean over the sentences, per voice):

- ``app``       the app's path (Synthesizer: text pass, our G2P, Kokoro, 22.05 kHz output),
- ``raw``       Kokoro's own 24 kHz output for our phonemes of the raw sentence (no text
                pass, no resampling, nothing after the model),
- ``misaki``    Kokoro on the phonemes misaki's espeak G2P would give (espeak-ng asked for
                tie marks, misaki's pair table applied to tied pairs only, ties and hyphens
                dropped) — what Kokoro's own pipeline feeds it, with the espeak-ng that
                piper bundles,
- ``raw22``     ``raw`` resampled to the app's 22.05 kHz (cosyvoice.audio.io.resample),
- ``trim``      ``raw`` with its silent edges cut as the app's sentence joiner cuts them
                (10 ms kept at the output's start and end; ``trim0.1``: 0.1 s kept),
- ``glide``     our phonemes keeping the ``ʲ`` that this espeak-ng writes after vowels,
- ``len``       the style row chosen by the phoneme string's length (ours counts the
                symbols in the vocabulary; Kokoro counts the string),
- ``speed0.9``, ``speed1.1``  Kokoro's duration scale,
- ``int8/...``  not here: the only model the registries ship is int8.

The judge: DNSMOS was trained mostly on English and other European read speech with added
noise; it rates clean-ness and naturalness of the signal, not pronunciation, so a wrong but
clean phoneme scores the same. A difference of a few hundredths between variants over 20
sentences is noise-level (the per-sentence spread is ~0.15). The scores are deterministic.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._metrics import dnsmos  # noqa: E402

VOICES = ("ef_dora", "em_alex", "ff_siwis", "pf_dora", "pm_alex")
VARIANTS = ("app", "raw", "misaki", "glide", "len")
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
        import re

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
    import unicodedata

    s = tied
    for a, b in MISAKI_E2M:
        s = s.replace(a, b)
    s = s.replace("^", "").replace("-", "")
    # misaki passes espeak's output as it comes; the vocabulary holds the combining tilde
    return "".join(unicodedata.normalize("NFD", c) if "\u0303" in unicodedata.normalize(
        "NFD", c) else c for c in s)


def main() -> None:
    from bench.kokoro_langs import language_of, sentences
    from cosyvoice.acoustic.kokoro import KokoroModel, voice_language
    from cosyvoice.audio.io import resample
    from cosyvoice.audio.join import OUTPUT_EDGE_S, trim_edges
    from cosyvoice.frontend.kokoro_g2p import ESPEAK_VOICES, espeak_to_kokoro

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--voices", nargs="*", default=list(VOICES))
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--sentences", type=int, default=20)
    ap.add_argument("--show", action="store_true", help="print each sentence's phonemes")
    args = ap.parse_args()
    kokoro = KokoroModel.load(threads=1)
    texts = sentences()
    tied = TiedEspeak() if "misaki" in args.variants else None
    synth = None
    if "app" in args.variants:
        from tests.conftest import local_services

        synth = local_services(Path(tempfile.mkdtemp(prefix="bench-lang-chain-"))).synth

    from functools import cache

    @cache  # variants that share phonemes share the synthesis
    def infer(ps: str, voice: str, speed: float = 1.0, by_string: bool = False):
        if not by_string:
            return kokoro.infer(ps, voice, speed), kokoro.sample_rate
        ids = kokoro.ids(ps)
        style = kokoro.pack(voice)[len(ps) - 1][None, :]
        out = kokoro._session.run(None, {
            "tokens": np.array([[0, *ids, 0]], np.int64), "style": style.astype(np.float32),
            "speed": np.array([speed], np.float32)})[0]
        return np.asarray(out, np.float32).reshape(-1), kokoro.sample_rate

    print(f"{'voice':<10}{'variant':<10}{'n':>3}{'OVRL':>7}{'SIG':>6}{'BAK':>6}"
          f"{'dropped':>9}")
    for voice in args.voices:
        lang = language_of(voice)
        pool = texts[lang][: args.sentences]
        for variant in args.variants:
            if variant in ("misaki", "glide") and lang not in ESPEAK_VOICES:
                continue  # English and Mandarin have their own G2P
            scores, dropped = [], set()
            for text in pool:
                ps = kokoro.g2p(text, voice_language(voice))
                ipa = kokoro.g2p.ipa(text, lang) if lang in ESPEAK_VOICES else ""
                if variant == "app":
                    from cosyvoice.pipeline import SynthesisRequest

                    r = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
                    wav, sr = r.wav, r.sample_rate
                elif variant == "misaki":
                    ps = misaki_phonemes(tied(text, ESPEAK_VOICES[lang]))
                    wav, sr = infer(ps, voice)
                elif variant == "glide":
                    ps = espeak_to_kokoro(ipa.replace("ʲ", "\ue000"), lang).replace(
                        "\ue000", "ʲ")
                    wav, sr = infer(ps, voice)
                elif variant == "len":
                    wav, sr = infer(ps, voice, by_string=True)
                elif variant.startswith("speed"):
                    wav, sr = infer(ps, voice, float(variant[5:]))
                elif variant == "raw22":
                    wav, sr = infer(ps, voice)
                    wav, sr = resample(wav, sr, 22050), 22050
                elif variant.startswith("trim"):  # "trim0.1": keep 0.1 s instead
                    wav, sr = infer(ps, voice)
                    wav = trim_edges(wav, sr, float(variant[4:] or OUTPUT_EDGE_S))
                else:  # raw
                    wav, sr = infer(ps, voice)
                dropped |= {c for c in ps if c not in kokoro.vocab}
                if args.show and variant != "app":
                    print(f"   {variant}: {ps}")
                scores.append(dnsmos(wav, sr))
            m = {k: float(np.mean([s[k] for s in scores])) for k in ("ovrl", "sig", "bak")}
            print(f"{voice:<10}{variant:<10}{len(pool):>3}{m['ovrl']:7.2f}{m['sig']:6.2f}"
                  f"{m['bak']:6.2f}{''.join(sorted(dropped)) or '-':>9}", flush=True)


if __name__ == "__main__":
    main()
