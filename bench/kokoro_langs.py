"""Kokoro's other languages: DNSMOS per voice, RTF and first streamed chunk per language.

    nice -n 5 .venv/bin/python bench/kokoro_langs.py [--sentences 20] [--runs 3]
        [--voices ef_dora ff_siwis ...] [--baseline]

Sentences: ``bench/kokoro_langs.json``, 20 per language (Spanish, French, Italian,
Brazilian Portuguese, Hindi, Japanese), written for this bench; no test or calibration
uses them. Every voice goes through the offline engine's Synthesizer (the app's path: the
text pass with the voice's language, Kokoro, 22.05 kHz output). Reported per voice:
DNSMOS P.835 OVRL/SIG/BAK (mean over the sentences); per voice also the RTF of a
three-sentence request and the time to its first streamed chunk (medians of ``--runs``,
after one warm-up). ``--baseline`` adds af_heart and zm_yunxi on bench/kokoro.py's
English and Mandarin sentences, so the languages can be read side by side in one run.
No ASR here speaks these languages, so there is no WER.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median  # noqa: E402
from bench._metrics import dnsmos  # noqa: E402

SENTENCES_FILE = Path(__file__).with_name("kokoro_langs.json")
# two voices per language where Kokoro has two (French has one), female first
VOICES = ("ef_dora", "em_alex", "ff_siwis", "if_sara", "im_nicola", "pf_dora", "pm_alex",
          "hf_alpha", "hm_omega", "jf_alpha", "jm_kumo")
BASELINE = ("af_heart", "zm_yunxi")


def sentences() -> dict[str, list[str]]:
    from bench.kokoro import EN, ZH

    return {"en": EN, "zh": ZH, **json.loads(SENTENCES_FILE.read_text("utf-8"))}


def language_of(voice: str) -> str:
    from cosyvoice.engine.offline import CAPABILITIES, PRESET_VOICES

    if voice in CAPABILITIES.voice_languages:
        return CAPABILITIES.voice_languages[voice]
    model = PRESET_VOICES[voice][0]
    return "zh" if model == "acoustic_zh" or voice[:1] == "z" else "en"


def quality(synth, voice: str, texts: list[str]) -> dict[str, float]:
    from cosyvoice.pipeline import SynthesisRequest

    scores = []
    for text in texts:
        r = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
        scores.append(dnsmos(r.wav, r.sample_rate))
    return {k: float(np.mean([s[k] for s in scores])) for k in ("ovrl", "sig", "bak")}


def latency(synth, voice: str, text: str, runs: int) -> tuple[float, float, float]:
    """(RTF, first chunk s, audio s) of one streamed request: medians over ``runs``."""
    from cosyvoice.pipeline import SynthesisRequest

    rtfs, firsts, duration = [], [], 0.0
    for i in range(runs + 1):  # the first run warms caches (G2P dictionaries, graph)
        t0 = time.perf_counter()
        first, samples, sr = None, 0, 1
        for chunk in synth.stream(SynthesisRequest(text=text, voice=voice, seed=1)):
            first = time.perf_counter() - t0 if first is None else first
            samples, sr = samples + len(chunk.wav), chunk.sample_rate
        total, duration = time.perf_counter() - t0, samples / sr
        if i:
            rtfs.append(total / duration)
            firsts.append(first)
    return median(rtfs), median(firsts), duration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20,
                        help="sentences scored by DNSMOS per voice (0: timings only)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--voices", nargs="*", default=list(VOICES))
    parser.add_argument("--baseline", action="store_true",
                        help="also af_heart (English) and zm_yunxi (Mandarin)")
    args = parser.parse_args()
    from tests.conftest import local_services

    print(f"machine: {machine()}")
    synth = local_services(Path(tempfile.mkdtemp(prefix="bench-kokoro-langs-"))).synth
    texts = sentences()
    voices = [*args.voices, *(BASELINE if args.baseline else ())]
    print(f"\n{'voice':<13}{'lang':<7}{'n':>3}{'OVRL':>7}{'SIG':>6}{'BAK':>6}"
          f"{'RTF':>7}{'first s':>9}{'audio s':>9}")
    for voice in voices:
        lang = language_of(voice)
        pool = texts[lang][: args.sentences]
        q = quality(synth, voice, pool) if pool else {"ovrl": np.nan, "sig": np.nan,
                                                       "bak": np.nan}
        rtf, first, audio = latency(synth, voice, " ".join(texts[lang][:3]), args.runs)
        print(f"{voice:<13}{lang:<7}{len(pool):>3}{q['ovrl']:7.2f}{q['sig']:6.2f}"
              f"{q['bak']:6.2f}{rtf:7.3f}{first:9.2f}{audio:9.1f}", flush=True)


if __name__ == "__main__":
    main()
