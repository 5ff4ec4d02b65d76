"""Cloning benchmark: does the voice adapter move Piper's voice toward each prompt?

For every prompt of :mod:`bench.prompts` the same English sentences are synthesized by
Piper (``en_US-joe-medium``, seed 0 = deterministic) and scored three ways:

- ``piper``   Piper's output as is (the unadapted voice a user would hear),
- ``revoc``   Piper → HiFi-GAN re-vocoded (adapter at strength 0: the vocoder's effect),
- ``adapted`` the adapter at strength 1.

Scores: GE2E cosine similarity to the prompt (project ``SpeakerEncoder``), DNSMOS P.835
OVRL (``speechmos``), pocketsphinx en-us WER against the normalized sentences, and the
adapter's RTF (adapt seconds / audio seconds). Targets (PASS/FAIL lines at the end):
mean similarity gain adapted − piper ≥ +0.08; mean adapted DNSMOS OVRL ≥ 3.0; WER adapted
≤ WER piper + 10 points.

Run: ``.venv/bin/python -m bench.cloning [--device cpu] [--prompts a,b] [--strength 1]``.
Needs the apt packages listed in ``bench/prompts.py`` for the full prompt set. Audio is
written to ``bench/out/cloning/`` for listening. Timings come from a shared machine.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench._metrics import dnsmos, normalize_text, transcribe, wer
from bench.prompts import Prompt, build_prompts
from cosyvoice.audio.io import write_wav_atomic
from cosyvoice.audio.mel import MelAnalyzer

OUT_DIR = Path(__file__).resolve().parent / "out" / "cloning"

SENTENCES = (
    "The old lighthouse keeper climbed the narrow stairs every evening to watch the "
    "fishing boats return safely to the harbor.",
    "She bought fresh bread, a jar of honey and two green apples before walking home "
    "slowly through the quiet park.",
)
# Piper's own voice profile is measured once on this text (not one of the sentences).
CALIBRATION = (
    "Please call Stella and ask her to bring these things with her from the store. "
    "Six spoons of fresh snow peas, five thick slabs of blue cheese, and maybe a snack "
    "for her brother Bob. We also need a small plastic snake and a big toy frog."
)
VARIANTS = ("piper", "revoc", "adapted")

TARGET_SIM_GAIN = 0.08
TARGET_DNSMOS = 3.0
TARGET_WER_MARGIN = 10.0


@dataclass
class Scores:
    sims: list[float] = field(default_factory=list)
    mos: list[float] = field(default_factory=list)
    edits: float = 0.0
    words: int = 0

    @property
    def sim(self) -> float:
        return float(np.mean(self.sims))

    @property
    def ovrl(self) -> float:
        return float(np.mean(self.mos))

    @property
    def wer(self) -> float:
        return 100.0 * self.edits / max(self.words, 1)


def load_models(device: str):
    from cosyvoice.acoustic.piper_en import PiperEnglish
    from cosyvoice.speaker.encoder import SpeakerEncoder
    from cosyvoice.vocoder.loader import HifiGanVocoder
    from cosyvoice.voice.adapter import VoiceAdapter

    vocoder = HifiGanVocoder.load(device=device)
    mel = MelAnalyzer(vocoder.mel_config, device=device)
    return PiperEnglish.load(device=device), VoiceAdapter(vocoder.vocode, mel), \
        SpeakerEncoder.load(device=device)


def score(scores: Scores, wav: np.ndarray, sr: int, ref_emb: np.ndarray, encoder,
          sentence: str) -> None:
    scores.sims.append(float(np.dot(encoder.embed(wav, sr), ref_emb)))
    scores.mos.append(dnsmos(wav, sr)["ovrl"])
    n = len(normalize_text(sentence).split())
    scores.edits += wer(sentence, transcribe(wav, sr)) * n / 100.0
    scores.words += n


def run_prompt(prompt: Prompt, piper, adapter, encoder, source, strength: float,
               rtfs: list[float], base: list[np.ndarray]):
    """Score the three variants for one prompt → ``(scores, profile seconds, profile)``."""
    from cosyvoice.voice.profile import VoiceProfile

    wav, sr = prompt.load()
    t0 = time.perf_counter()
    target = VoiceProfile.from_audio(wav, sr, adapter.mel)
    profile_s = time.perf_counter() - t0
    ref = encoder.embed(wav, sr)
    out: dict[str, Scores] = {v: Scores() for v in VARIANTS}
    for i, (sentence, x) in enumerate(zip(SENTENCES, base, strict=True)):
        revoc, vsr = adapter.adapt(x, piper.sample_rate, source, target, strength=0.0)
        t0 = time.perf_counter()
        adapted, _ = adapter.adapt(x, piper.sample_rate, source, target, strength=strength)
        rtfs.append((time.perf_counter() - t0) / (len(x) / piper.sample_rate))
        for name, y, ysr in (("piper", x, piper.sample_rate), ("revoc", revoc, vsr),
                             ("adapted", adapted, vsr)):
            score(out[name], y, ysr, ref, encoder, sentence)
            if name != "piper":
                write_wav_atomic(OUT_DIR / f"{prompt.name}_{i}_{name}.wav", y, ysr)
    return out, profile_s, target


def print_prompt(prompt: Prompt, res: dict[str, Scores], source, target_f0: float) -> None:
    print(f"\n== {prompt.name} ({prompt.sex}, {prompt.kind}, {prompt.duration_s:.1f} s) "
          f"{prompt.source}")
    print(f"   {'variant':8s} {'GE2E sim':>8s} {'DNSMOS':>7s} {'WER %':>6s}")
    for name in VARIANTS:
        s = res[name]
        print(f"   {name:8s} {s.sim:8.3f} {s.ovrl:7.2f} {s.wer:6.1f}")
    gain = res["adapted"].sim - res["piper"].sim
    gain_rv = res["adapted"].sim - res["revoc"].sim
    print(f"   sim gain adapted-piper {gain:+.3f}, adapted-revoc {gain_rv:+.3f}; "
          f"F0 median piper {source.f0_median_hz:.0f} Hz -> prompt {target_f0:.0f} Hz")


def summary(all_res: dict[str, dict[str, Scores]], rtfs: list[float],
            profile_s: list[tuple[float, float]]) -> None:
    mean = {v: (np.mean([r[v].sim for r in all_res.values()]),
                np.mean([r[v].ovrl for r in all_res.values()]),
                np.mean([r[v].wer for r in all_res.values()])) for v in VARIANTS}
    print(f"\n== summary over {len(all_res)} prompts x {len(SENTENCES)} sentences")
    print(f"   {'variant':8s} {'GE2E sim':>8s} {'DNSMOS':>7s} {'WER %':>6s}")
    for v in VARIANTS:
        print(f"   {v:8s} {mean[v][0]:8.3f} {mean[v][1]:7.2f} {mean[v][2]:6.1f}")
    gain = mean["adapted"][0] - mean["piper"][0]
    checks = (
        (f"mean similarity gain adapted-piper {gain:+.3f} (vs revoc "
         f"{mean['adapted'][0] - mean['revoc'][0]:+.3f}) >= +{TARGET_SIM_GAIN}",
         gain >= TARGET_SIM_GAIN),
        (f"adapted DNSMOS OVRL mean {mean['adapted'][1]:.2f} >= {TARGET_DNSMOS}",
         mean["adapted"][1] >= TARGET_DNSMOS),
        (f"WER adapted {mean['adapted'][2]:.1f} <= WER piper {mean['piper'][2]:.1f} + "
         f"{TARGET_WER_MARGIN:.0f}", mean["adapted"][2] <= mean["piper"][2] + TARGET_WER_MARGIN),
    )
    for text, ok in checks:
        print(f"   {'PASS' if ok else 'FAIL'}  {text}")
    per10 = [t / d * 10.0 for t, d in profile_s]
    print(f"   adapter RTF median {np.median(rtfs):.3f} (min {np.min(rtfs):.3f}, max "
          f"{np.max(rtfs):.3f}, n={len(rtfs)}; includes HiFi-GAN)")
    print(f"   VoiceProfile.from_audio median {np.median([t for t, _ in profile_s]):.3f} s "
          f"per prompt, {np.median(per10):.3f} s per 10 s of prompt")
    print("   (timings on a shared machine; similarity/DNSMOS/WER are deterministic)")
    print(f"RESULT clone_sim_gain={gain:.3f} clone_dnsmos_ovrl={mean['adapted'][1]:.2f} "
          f"clone_wer_delta={mean['adapted'][2] - mean['piper'][2]:.1f} "
          f"clone_adapter_rtf={np.median(rtfs):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--prompts", default="", help="comma-separated prompt names")
    ap.add_argument("--strength", type=float, default=1.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from cosyvoice.voice.profile import VoiceProfile

    prompts = build_prompts()
    if args.prompts:
        prompts = [p for p in prompts if p.name in args.prompts.split(",")]
    piper, adapter, encoder = load_models(args.device)
    calib = piper.synthesize(CALIBRATION, seed=0)
    source = VoiceProfile.from_audio(calib.wav, calib.sample_rate, adapter.mel)
    base = [piper.synthesize(s, seed=0).wav for s in SENTENCES]
    print(f"device {args.device}; strength {args.strength}; Piper profile: F0 "
          f"{source.f0_median_hz:.0f} Hz, range {source.f0_range_st:.1f} st, formants "
          f"{[round(f) for f in source.formants_hz]}")
    all_res, rtfs, profile_s = {}, [], []
    for prompt in prompts:
        res, t, target = run_prompt(prompt, piper, adapter, encoder, source, args.strength,
                                    rtfs, base)
        all_res[prompt.name] = res
        profile_s.append((t, prompt.duration_s))
        print_prompt(prompt, res, source, target.f0_median_hz)
    summary(all_res, rtfs, profile_s)


if __name__ == "__main__":
    main()
