"""Mandarin output quality: sentence duration, inner silences, DNSMOS, RTF.

    nice -n 5 .venv/bin/python bench/zh_quality.py [--runs 5]

Targets (issue #3): a 30-character sentence lasts 4–9 s with no silence > 0.6 s inside it
(silence: 10 ms frames more than 40 dB under the peak, leading/trailing excluded); DNSMOS
P.835 OVRL ≥ 3.0 (mean over the sentences) on the HiFi-GAN-bridge output; RTF ≤ 0.3 of the
whole Mandarin backend (frontend + FastSpeech2 + bridge + HiFi-GAN), median of ``--runs``.
The bundled MB-MelGAN (LiteRT, 24 kHz) is measured beside it on the same mels.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median, verdict  # noqa: E402
from bench._metrics import dnsmos  # noqa: E402

SENTENCE_30 = "我们在这里测试一个比较长的句子，看看它的节奏和声调是否自然流畅。"  # 30 characters
SENTENCES = [
    SENTENCE_30,
    "今天天气很好，我们一起去公园散步吧。",
    "这家银行的行长昨天接受了记者的采访。",
    "火车马上就要到站了，请带好您的行李。",
    "科学家们正在研究新的能源技术。",
    "周末我打算和朋友去看电影。",
]


def longest_inner_silence(wav: np.ndarray, sr: int, floor_db: float = -40.0) -> float:
    hop = int(0.01 * sr)
    n = len(wav) // hop
    rms = np.sqrt(np.mean(wav[: n * hop].reshape(n, hop) ** 2, axis=1) + 1e-12)
    quiet = 20 * np.log10(rms / rms.max()) < floor_db
    loud = np.flatnonzero(~quiet)
    longest = run = 0
    for q in quiet[loud[0]: loud[-1] + 1]:
        run = run + 1 if q else 0
        longest = max(longest, run)
    return longest * hop / sr


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from cosyvoice.acoustic.mandarin import MandarinAcoustic
    from cosyvoice.vocoder.loader import HifiGanVocoder

    print(f"machine: {machine()} (shared; absolute times are noisy)")
    vocoder = HifiGanVocoder.load()
    zh = MandarinAcoustic.load(mel_config=vocoder.mel_config)
    chars = sum(1 for c in SENTENCE_30 if "\u4e00" <= c <= "\u9fff")
    from cosyvoice.acoustic.base import to_audio

    wav = to_audio(zh.synthesize(SENTENCE_30), vocoder.vocode)
    sec = len(wav) / zh.sample_rate
    gap = longest_inner_silence(wav, zh.sample_rate)
    print(f"\n{chars}-character sentence: {sec:.2f} s (target 4–9): {verdict(4 <= sec <= 9)}; "
          f"longest inner silence {gap:.2f} s (target ≤ 0.6): {verdict(gap <= 0.6)}")
    try:
        from bench.mb_melgan import MBMelGAN

        mb = MBMelGAN.load()
    except Exception as e:  # the interpreter is a dev dependency
        print(f"MB-MelGAN not measured: {e}")
        mb = None
    print(f"\nDNSMOS P.835 per sentence ({len(SENTENCES)}):   HiFi-GAN bridge (OVRL SIG BAK)"
          + ("   |   MB-MelGAN" if mb else ""))
    rows = {"hifigan": [], "mbmelgan": []}
    for text in SENTENCES:
        r = zh.render(text)
        wav = vocoder.vocode(r.mel)
        a = dnsmos(wav, vocoder.sample_rate)
        rows["hifigan"].append(a["ovrl"])
        line = f"   {a['ovrl']:.2f} {a['sig']:.2f} {a['bak']:.2f}"
        if mb:
            b = dnsmos(mb.vocode(r.model_mel), mb.sample_rate)
            rows["mbmelgan"].append(b["ovrl"])
            line += f"   |   {b['ovrl']:.2f} {b['sig']:.2f} {b['bak']:.2f}"
        print(f"{line}   {text[:14]}…")
    ovrl = float(np.mean(rows["hifigan"]))
    print(f"mean OVRL HiFi-GAN bridge {ovrl:.2f} (target ≥ 3.0): {verdict(ovrl >= 3.0)}"
          + (f"; MB-MelGAN {np.mean(rows['mbmelgan']):.2f}" if mb else ""))
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        wav = to_audio(zh.synthesize(SENTENCE_30), vocoder.vocode)
        times.append(time.perf_counter() - t)
    rtf = median(times) / (len(wav) / zh.sample_rate)
    print(f"RESULT zh_sentence30_s={sec:.2f} zh_inner_silence_s={gap:.2f} "
          f"zh_dnsmos_ovrl={ovrl:.2f} zh_rtf={rtf:.3f}")
    print(f"\nRTF (frontend + FastSpeech2 + bridge + HiFi-GAN, {sec:.2f} s audio, median of "
          f"{args.runs}): {rtf:.3f} (target ≤ 0.3): {verdict(rtf <= 0.3)}; runs "
          + " ".join(f"{x:.2f}" for x in times) + " s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
