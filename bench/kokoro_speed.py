"""The default voices at speed (issue #38): Kokoro's CPU path against the plain onnxruntime
run of the shipped graph, side by side in one run.

    nice -n 5 .venv/bin/python bench/kokoro_speed.py [--quick]

*reference*: the shipped int8 graph whole in onnxruntime (``--kokoro-path onnx``), streamed
sentence by sentence (today's behaviour before #38); *ours*: the app's default
(``--kokoro-path auto``: the generator in torch where the CPU has int8 dot products) with a
streamed first sentence cut into pieces. Both through the app's Synthesizer, in this
process, alternately (so both see the same load); the load average is printed before and
after. One table:

- **RTF**, whole request (``Synthesizer.synthesize``), median of ``--runs``, and the process's
  CPU-seconds per audio second beside it (what a loaded or concurrent box pays);
- **first audio** (``Synthesizer.stream``: time to the first chunk) for a short, a
  130-character and a 300-character text in English (``af_heart``) and Mandarin
  (``zm_yunxi``), alone and with 4 requests started at once (median over the 4; no gate,
  the engine's own capacity);
- **peak RSS** of a fresh process that loads Kokoro on each path and speaks the texts;
- **max |diff|** and SNR of the audio against the reference for the same phonemes;
- **quality**: DNSMOS P.835 OVRL and WER (English, Whisper base through the app's
  recognizer) / CER (Mandarin) on the evaluation test set's sentences, reference vs ours,
  and ours streamed (pieces) vs whole;
- **the physical limit**: Kokoro's FLOPs per audio second counted from the graph (the
  shapes onnxruntime's profiler records × the weights' dimensions) over the peak this CPU
  measures here (fp32 SGEMM; int8 oneDNN conv), against the FLOP rate each path reaches.

Other modes: ``--closeness`` (SNR and log-mel L1 to the reference, ours and the float
weights, the bound of tests/acoustic/test_kokoro_fast.py), ``--convs`` (one conv: onnxruntime
ConvInteger vs oneDNN's int8 conv), ``--profile`` (the shipped graph's time per op type).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {
    ("en", "short"): "Hello, how are you today?",
    ("en", "130"): ("He forgot his umbrella at home, so he waited under the old stone bridge "
                    "until the rain finally stopped and the clouds drifted away."),
    ("en", "300"): ("The museum opened a new exhibition about ancient sailing ships last week. "
                    "On the first weekend the queue stretched all the way down the street, "
                    "past the bakery and the small bookshop, because everyone in town wanted "
                    "to see the huge wooden model of a merchant vessel that had crossed the "
                    "ocean three hundred years ago."),
    ("zh", "short"): "你好，今天天气很好。",
    ("zh", "130"): ("清晨的湖面上飘着一层薄薄的雾气，几只白色的水鸟贴着水面慢慢地飞过。远处的山峦在"
                    "阳光下渐渐显露出轮廓，岸边的柳树随风轻轻摇摆。钓鱼的老人安静地坐在石头上，身边"
                    "放着一壶热茶，仿佛整个世界都停了下来，只剩下风声、水声和远处传来的几声鸟叫。"),
    ("zh", "300"): ("清晨的湖面上飘着一层薄薄的雾气，几只白色的水鸟贴着水面慢慢地飞过。远处的山峦在"
                    "阳光下渐渐显露出轮廓，岸边的柳树随风轻轻摇摆。钓鱼的老人安静地坐在石头上，身边"
                    "放着一壶热茶，仿佛整个世界都停了下来。过了一会儿，太阳升得更高了，公园里的人也"
                    "多了起来。有人在草地上打太极拳，有人沿着小路慢跑，还有几个孩子拿着风筝在空地上"
                    "跑来跑去，笑声传得很远。卖早点的小摊前排起了长队，油条和豆浆的香味飘满了整条街"
                    "。一位老师带着学生来写生，他们把画板支在湖边，认真地画着眼前的风景。到了中午，"
                    "雾气完全散去，湖水变得清澈见底，连水底的小石头都看得清清楚楚。"),
}
VOICES = {"en": "af_heart", "zh": "zm_yunxi"}
PATHS = {"reference": "onnx", "ours": "auto"}


# ---- the two synthesizers ---------------------------------------------------------------
def synthesizers(threads: int) -> dict:
    """name → Synthesizer on that path (Kokoro loaded); the reference streams whole
    sentences, as the app did before #38."""
    from tests.conftest import local_services

    out = {}
    for name, path in PATHS.items():
        services = local_services(Path(tempfile.mkdtemp(prefix=f"bench-{name}-")),
                                  kokoro_path=path, kokoro_threads=threads)
        services.manager.get("kokoro")
        if name == "reference":
            services.synth.engine._cuts = lambda *a: False  # noqa: SLF001 (whole sentences)
        out[name] = services.synth
    return out


def request(lang: str, size: str):
    from cosyvoice.pipeline import SynthesisRequest

    return SynthesisRequest(text=TEXTS[(lang, size)], voice=VOICES[lang], seed=1)


def first_audio(synth, req) -> float:
    """Seconds to the first streamed chunk (the rest of the request is not made)."""
    t0 = time.perf_counter()
    chunks = synth.stream(req)
    next(chunks)
    first = time.perf_counter() - t0
    chunks.close()
    return first


def concurrent_first(synth, req, n: int = 4) -> float:
    """Median time to the first chunk of ``n`` streamed requests started together."""
    times: list[float] = []
    threads = [threading.Thread(target=lambda: times.append(first_audio(synth, req)))
               for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statistics.median(times)


def whole(synth, req) -> tuple[float, float]:
    """(RTF, CPU-seconds per audio second) of one non-streamed request."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = synth.synthesize(req)
    result.path.unlink(missing_ok=True)
    return ((time.perf_counter() - t0) / result.duration_s,
            (time.process_time() - c0) / result.duration_s)


def speed_rows(synths: dict, runs: int) -> list[tuple[str, dict]]:
    rows = []
    for synth in synths.values():  # warm-up: kernels, G2P dictionaries
        for lang in VOICES:
            first_audio(synth, request(lang, "short"))
    for lang in VOICES:
        for size in ("130", "300"):
            got = {n: [whole(s, request(lang, size)) for _ in range(runs)]
                   for n, s in synths.items()}
            rows.append((f"RTF, {lang} {size} chars (whole request)",
                         {n: statistics.median(r for r, _ in v) for n, v in got.items()}))
            rows.append((f"  CPU-s per audio s, {lang} {size}",
                         {n: statistics.median(c for _, c in v) for n, v in got.items()}))
    for lang in VOICES:
        for size in ("short", "130", "300"):
            got = {n: statistics.median(first_audio(s, request(lang, size)) for _ in range(runs))
                   for n, s in synths.items()}
            rows.append((f"first audio s, {lang} {size}", got))
    for lang in VOICES:
        for size in ("short", "300"):
            got = {n: concurrent_first(s, request(lang, size)) for n, s in synths.items()}
            rows.append((f"first audio s, {lang} {size}, 4 at once (median)", got))
    return rows


# ---- same phonemes: difference to the reference -------------------------------------------
def diff_rows(synths: dict) -> list[tuple[str, dict]]:
    """Ours against the reference for the same phonemes, beside the graph's own float
    weights (the fp32 path: how far the shipped int8 graph is from them)."""
    from cosyvoice.acoustic.kokoro import KokoroModel

    models = {n: s.manager.get("kokoro") for n, s in synths.items()}
    models["float weights"] = KokoroModel.load(path="fp32")
    rows = []
    for lang in VOICES:
        text = TEXTS[(lang, "130")]
        ref = models["reference"].speaker(VOICES[lang]).synthesize(text).wav
        diffs, snrs = {"reference": 0.0}, {"reference": float("inf")}
        for name in ("ours", "float weights"):
            out = models[name].speaker(VOICES[lang]).synthesize(text).wav
            n = min(len(ref), len(out))
            d = ref[:n] - out[:n]
            diffs[name] = float(np.abs(d).max())
            snrs[name] = float(10 * np.log10(np.sum(ref[:n] ** 2) / np.sum(d ** 2)))
        rows.append((f"max |diff| to the reference, {lang} 130 (same phonemes)", diffs))
        rows.append((f"  SNR dB to the reference, {lang} 130", snrs))
    del models["float weights"]
    return rows


# ---- quality ----------------------------------------------------------------------------
def quality_rows(synths: dict, n: int) -> list[tuple[str, dict]]:
    """DNSMOS OVRL and WER/CER: each path's whole requests, and ours streamed in pieces."""
    from bench._metrics import dnsmos, to_16k
    from bench.eval import testset
    from bench.eval.metrics import error_rate
    from cosyvoice.asr.transcriber import Transcriber
    from cosyvoice.pipeline import SynthesisRequest

    asr = Transcriber.load(ROOT / "models", "auto", threads=1)
    unseen = testset.load()

    def score(wavs: list[np.ndarray], sr: int, texts: list[str], lang: str):
        errs = total = 0
        for wav, text in zip(wavs, texts, strict=True):
            e, t = error_rate(text, asr.transcribe(to_16k(wav, sr), language=lang).text)
            errs, total = errs + e, total + t
        return float(np.mean([dnsmos(w, sr)["ovrl"] for w in wavs])), 100.0 * errs / total

    rows = []
    for lang in ("en", "zh"):
        texts = [item.text for item in unseen.items(lang, n)]
        got: dict[str, tuple[float, float]] = {}
        for name, synth in synths.items():
            reqs = [SynthesisRequest(text=t, voice=VOICES[lang], seed=1) for t in texts]
            wavs = []
            for req in reqs:
                result = synth.synthesize(req)
                result.path.unlink(missing_ok=True)
                wavs.append(result.wav)
            got[name] = score(wavs, synth.sample_rate, texts, lang)
            if name == "ours":
                cut = [np.concatenate([c.wav for c in synth.stream(r)]) for r in reqs]
                got["ours streamed"] = score(cut, synth.sample_rate, texts, lang)
        metric = "WER %" if lang == "en" else "CER %"
        rows.append((f"DNSMOS OVRL, {lang} ({n} sentences)", {k: v[0] for k, v in got.items()}))
        rows.append((f"{metric}, {lang} ({n} sentences)", {k: v[1] for k, v in got.items()}))
    return rows


# ---- memory -------------------------------------------------------------------------------
def rss_child(path: str) -> None:
    """Run in a fresh process: load Kokoro on ``path``, speak every text, print JSON."""
    import psutil

    from cosyvoice.acoustic.kokoro import KokoroModel

    model = KokoroModel.load(path=path)
    loaded = psutil.Process().memory_info().rss
    for (lang, _), text in TEXTS.items():
        sp = model.speaker(VOICES[lang])
        sp.synthesize(text[:200])  # one frontend sentence or two; the engine's part size
    # VmHWM, this image's own peak: ru_maxrss would carry the forking parent's over exec
    status = Path("/proc/self/status").read_text()
    peak = int(next(x for x in status.splitlines() if x.startswith("VmHWM")).split()[1]) * 1024
    print(json.dumps({"path": model.path, "loaded": loaded, "peak": peak}))


def rss_rows() -> list[tuple[str, dict]]:
    got = {}
    for name, path in PATHS.items():
        out = subprocess.run([sys.executable, __file__, "--rss-child", path], check=True,
                             capture_output=True, text=True, cwd=ROOT).stdout
        got[name] = json.loads(out.strip().splitlines()[-1])
    return [("RSS after load, MB", {n: v["loaded"] / 2**20 for n, v in got.items()}),
            ("peak RSS, MB (load + the 6 texts)", {n: v["peak"] / 2**20 for n, v in got.items()})]


# ---- FLOPs and the physical limit ---------------------------------------------------------
def graph_flops(profile_file: str, model) -> tuple[float, dict[str, float]]:
    """FLOPs of one run from onnxruntime's profile: per conv / matmul / LSTM node, its
    output shape (as recorded) × its weight's dimensions from the graph; and the time per
    op type (µs). Weights onnxruntime pre-packs are absent from the recorded inputs, hence
    the graph."""
    from onnx import helper

    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    dims = {n.name: [weights[i] for i in n.input[1:] if i in weights] for n in model.graph.node}
    trans_a = {n.name: any(a.name == "transA" and helper.get_attribute_value(a)
                           for a in n.attribute) for n in model.graph.node}
    events = json.loads(Path(profile_file).read_text())
    flops, times = 0.0, {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name, op = e["name"][: -len("_kernel_time")], e["args"]["op_name"]
        times[op] = times.get(op, 0.0) + e["dur"]
        out = [list(d.values())[0] for d in e["args"].get("output_type_shape", [])]
        inp = [list(d.values())[0] for d in e["args"].get("input_type_shape", [])]
        w = dims.get(name, [])
        if op in ("Conv", "ConvInteger") and w:
            flops += 2 * np.prod(out[0]) * np.prod(w[0][1:])
        elif op == "ConvTranspose" and w:
            flops += 2 * np.prod(inp[0]) * np.prod(w[0][1:])
        elif op in ("MatMul", "MatMulInteger", "FusedMatMul") and inp:
            flops += 2 * np.prod(out[0]) * inp[0][-2 if trans_a.get(name) else -1]
        elif op in ("LSTM", "DynamicQuantizeLSTM") and w:
            d, a, b = w[0]
            hidden4, size = (a, b) if op == "LSTM" else (b, a)
            flops += 2 * inp[0][0] * d * hidden4 * (size + hidden4 // 4)
    return float(flops), times


def profiled_run(graph_model, feed: dict, prefix: str) -> tuple[str, np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.enable_profiling = True
    opts.profile_file_prefix = prefix
    session = ort.InferenceSession(graph_model.SerializeToString(), opts,
                                   providers=["CPUExecutionProvider"])
    audio = session.run(None, feed)[0]
    return session.end_profiling(), np.asarray(audio).reshape(-1)


def kokoro_feed(lang: str, size: str = "130") -> dict:
    from cosyvoice.acoustic.kokoro import KokoroModel, default_dir

    folder = default_dir()
    vocab = json.loads((folder / "vocab.json").read_text("utf-8"))["vocab"]
    from cosyvoice.frontend.kokoro_g2p import KokoroG2P

    phonemes = KokoroG2P()(TEXTS[(lang, size)].split("。")[0], "zh" if lang == "zh" else "en-us")
    ids = [vocab[c] for c in phonemes if c in vocab][:510]
    pack = np.fromfile(folder / "voices" / f"{VOICES[lang]}.bin", "<f4").reshape(510, 256)
    del KokoroModel
    return {"tokens": np.array([[0, *ids, 0]], np.int64), "style": pack[len(ids) - 1][None],
            "speed": np.array([1.0], np.float32)}


def peak_rates() -> dict[str, float]:
    """This CPU's measured peaks per core, in CPU-seconds (one thread, best of 5, so other
    jobs on the box cost little): fp32 SGEMM (torch, 2048²) in GFLOP/s and oneDNN's int8
    conv (512 channels, k3, 16k frames, what the int8 path runs) in GOP/s."""
    import torch
    from torch import nn

    from cosyvoice.acoustic.kokoro_generator import Int8Conv8
    from cosyvoice.kernels.tiling import channels_last

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)

    def best(fn, n=5) -> float:
        fn()
        times = []
        for _ in range(n):
            c0 = time.process_time()
            fn()
            times.append(time.process_time() - c0)
        return min(times)

    try:
        sgemm = 2 * 2048 ** 3 / best(lambda: a @ b) / 1e9
        c8 = Int8Conv8(nn.Conv1d(512, 512, 3, padding=1))
        t = 16384
        with torch.inference_mode():
            acc = channels_last(torch.randn(t, 512))
            buf = torch.randn(c8.padded_rows(t), 512)
            int8 = 2 * 512 * 512 * 3 * t / best(lambda: c8.add_padded_(buf, acc)) / 1e9
    finally:
        torch.set_num_threads(threads)
    return {"fp32 SGEMM": sgemm, "int8 conv": int8}


def limit_rows(cpu_s: dict[str, float]) -> tuple[list[tuple[str, dict]], list[str]]:
    """Kokoro's FLOPs per audio second (counted on the float graph's profile, the 130-char
    English text) against each path's CPU-seconds per audio second: the FLOP rate a core
    reaches, as a fraction of its measured peak."""
    from cosyvoice.acoustic.kokoro import default_dir
    from cosyvoice.acoustic.kokoro_graph import KokoroGraph

    graph = KokoroGraph.load(default_dir() / "kokoro-v1.0.int8.onnx")
    floats = graph.dequantized()
    with tempfile.TemporaryDirectory() as tmp:
        profile, audio = profiled_run(floats, kokoro_feed("en"), str(Path(tmp) / "float"))
        flops, _ = graph_flops(profile, floats)
    per_s = flops / (len(audio) / 24000) / 1e9
    peaks = peak_rates()
    cores = os.cpu_count() or 1
    rows = [("Kokoro GFLOP per audio second (counted from the graph)",
             {"reference": per_s, "ours": per_s})]
    for name, peak in peaks.items():
        rows.append((f"  fraction of a core's {name} peak ({peak:.0f} G/s) reached",
                     {n: per_s / c / peak for n, c in cpu_s.items()}))
    notes = [f"physical limit: {per_s:.1f} GFLOP per audio second over {cores} cores' peak "
             f"→ RTF floor {per_s / cores / peaks['fp32 SGEMM']:.3f} at the fp32 SGEMM peak "
             f"({peaks['fp32 SGEMM']:.0f} GFLOP/s per core), "
             f"{per_s / cores / peaks['int8 conv']:.3f} at the int8 conv peak "
             f"({peaks['int8 conv']:.0f} GOP/s per core); fraction reached = "
             "(GFLOP per audio s ÷ CPU-s per audio s) ÷ a core's peak"]
    return rows, notes


# ---- other modes --------------------------------------------------------------------------
def profile_mode() -> None:
    """The shipped graph's time per op type (onnxruntime's profiler, 1 thread)."""
    import onnx

    from cosyvoice.acoustic.kokoro import default_dir

    model = onnx.load(str(default_dir() / "kokoro-v1.0.int8.onnx"))
    with tempfile.TemporaryDirectory() as tmp:
        profile, audio = profiled_run(model, kokoro_feed("en"), str(Path(tmp) / "int8"))
        _, times = graph_flops(profile, model)
    total = sum(times.values())
    print(f"shipped graph, {len(audio) / 24000:.2f} s of audio, 1 thread: node time "
          f"{total / 1e6:.2f} s")
    for op, us in sorted(times.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {op:<24}{us / 1e3:9.1f} ms {100 * us / total:5.1f} %")


def convs_mode() -> None:
    """One 128-channel k11 conv over 37k frames (the generator's last stage), 1 thread:
    onnxruntime's ConvInteger (u8 × u8) and float Conv against oneDNN's int8 and fp32."""
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper, numpy_helper
    from torch import nn

    from cosyvoice.acoustic.kokoro_generator import Int8Conv8
    from cosyvoice.kernels.direct import DirectConv
    from cosyvoice.kernels.tiling import channels_last, tile_sizes

    torch.set_num_threads(1)
    c, k, t = 128, 11, 36721
    x = np.random.default_rng(0).standard_normal((1, c, t)).astype(np.float32)
    conv = nn.Conv1d(c, c, k, padding=k // 2)
    w = conv.weight.detach().numpy()
    scale = float(np.abs(w).max() / 127)
    wq = np.clip(np.round(w / scale) + 128, 0, 255).astype(np.uint8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
             helper.make_node("ConvInteger", ["q", "w", "z", "wz"], ["i"], pads=[5, 5]),
             helper.make_node("Cast", ["i"], ["f"], to=1),
             helper.make_node("Mul", ["s", "ws"], ["m"]),
             helper.make_node("Mul", ["f", "m"], ["y"])]
    inits = [numpy_helper.from_array(wq, "w"), numpy_helper.from_array(np.uint8(128), "wz"),
             numpy_helper.from_array(np.float32(scale), "ws")]
    float_nodes = [helper.make_node("Conv", ["x", "wf"], ["y"], pads=[5, 5])]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1

    def session(nodes, inits):
        g = helper.make_graph(nodes, "c", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [1, c, t])], [helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        return ort.InferenceSession(m.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])

    def cpu(fn, n=5) -> float:
        fn()
        best = 1e9
        for _ in range(n):
            c0 = time.process_time()
            fn()
            best = min(best, time.process_time() - c0)
        return best

    ops = 2 * c * c * k * t
    int8 = session(nodes, inits)
    f32 = session(float_nodes, [numpy_helper.from_array(w, "wf")])
    with torch.inference_mode():
        acc = channels_last(torch.from_numpy(x[0].T.copy()))
        c8 = Int8Conv8(conv)
        direct = DirectConv(conv, True, tile=tile_sizes(60))
        buf = torch.randn(c8.padded_rows(t), c)
        buf32 = torch.randn(direct.padded_rows(t), c)
        rows = {"onnxruntime ConvInteger (u8 × u8)": cpu(lambda: int8.run(None, {"x": x})),
                "onnxruntime Conv fp32": cpu(lambda: f32.run(None, {"x": x})),
                "oneDNN int8 (Int8Conv, tiled)": cpu(lambda: c8.add_padded_(buf, acc)),
                "oneDNN fp32 (DirectConv, tiled)": cpu(lambda: direct.add_padded_(buf32, acc))}
    print(f"one conv {c} ch, k{k}, {t} frames, 1 thread (CPU-seconds, best of 5)")
    for name, s in rows.items():
        print(f"  {name:<36}{s * 1e3:8.1f} ms {ops / s / 1e9:7.0f} GOP/s")


def closeness_mode() -> None:
    """SNR and log-mel L1 to the reference graph on 6 sentences per default voice: the int8
    path and the float weights (the shipped graph's own quantisation noise)."""
    from bench.eval import testset
    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.audio.io import resample
    from cosyvoice.audio.mel import MelAnalyzer
    from tests.acoustic.test_kokoro_fast import EN as TEST_EN
    from tests.acoustic.test_kokoro_fast import ZH as TEST_ZH

    unseen = testset.load()
    en, zh = ([item.text for item in unseen.items(lang, 5)] for lang in ("en", "zh"))
    mel = MelAnalyzer()
    models = {p: KokoroModel.load(path=p) for p in ("onnx", "int8", "fp32")}
    for voice, texts in (("af_heart", [TEST_EN, *en]), ("zm_yunxi", [TEST_ZH, *zh])):
        for text in texts:
            ref = models["onnx"].speaker(voice).synthesize(text).wav
            line = f"{voice} {text[:24]:<26}"
            for p in ("int8", "fp32"):
                out = models[p].speaker(voice).synthesize(text).wav
                n = min(len(ref), len(out))
                d = ref[:n] - out[:n]
                snr = 10 * np.log10(np.sum(ref[:n] ** 2) / np.sum(d ** 2))
                l1 = float((mel(resample(ref[:n], 24000, 22050))
                            - mel(resample(out[:n], 24000, 22050))).abs().mean())
                line += f"  {p}: {snr:5.1f} dB L1 {l1:.3f}"
            print(line, flush=True)


# ---- the table ----------------------------------------------------------------------------
def cpu_line() -> str:
    import platform

    import onnxruntime
    import torch

    from cosyvoice.kernels.cpu import cpu_flags

    info = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = (f"{info.get('model name', platform.processor() or 'cpu')} (family "
            f"{info.get('cpu family', '?')}, model {info.get('model', '?')})")
    flags = sorted(cpu_flags() & {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8",
                                  "avx512_bf16"})
    return (f"CPU: {name}, {os.cpu_count()} cores, {' '.join(flags)}; torch "
            f"{torch.__version__}, onnxruntime {onnxruntime.__version__}")


def fmt(v: float) -> str:
    if v == float("inf"):
        return "–"
    return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"


def progress(rows: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Print rows as they are measured (the table comes at the end); returns them."""
    for label, vals in rows:
        print(f"  {label}: " + ", ".join(f"{k} {fmt(v)}" for k, v in vals.items()), flush=True)
    return rows


def print_table(rows: list[tuple[str, dict]]) -> None:
    names = ["reference", "ours", "ours streamed", "float weights"]
    names = [n for n in names if any(n in r for _, r in rows)]
    print(f"\n| metric | {' | '.join(names)} | ours / reference |")
    print(f"|---|{'---|' * len(names)}---|")
    for label, vals in rows:
        cells = [fmt(vals[n]) if n in vals else "" for n in names]
        ratio = (f"{vals['ours'] / vals['reference']:.2f}" if vals.get("reference")
                 and vals["reference"] != float("inf") and "ours" in vals else "")
        print(f"| {label} | {' | '.join(cells)} | {ratio} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 run per figure, 5 sentences per language for quality")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1,
                        help="onnxruntime intra-op threads of both paths (kokoro_threads)")
    parser.add_argument("--skip", nargs="*", default=[],
                        help="parts to skip: speed diff quality rss limit")
    parser.add_argument("--closeness", action="store_true")
    parser.add_argument("--convs", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("jieba").setLevel(logging.WARNING)
    if args.rss_child:
        return rss_child(args.rss_child)
    for flag, mode in (("closeness", closeness_mode), ("convs", convs_mode),
                       ("profile", profile_mode)):
        if getattr(args, flag):
            return mode()
    runs, n = (1, 5) if args.quick else (args.runs, args.sentences)
    import psutil
    import torch

    load0 = psutil.getloadavg()
    print(cpu_line())
    print(f"load average at the start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; torch "
          f"threads {torch.get_num_threads()}, onnxruntime threads {args.threads}", flush=True)
    rows: list[tuple[str, dict]] = []
    synths = synthesizers(args.threads)
    models = {name: s.manager.get("kokoro").path for name, s in synths.items()}
    print(f"paths: {models}", flush=True)
    if "speed" not in args.skip:
        rows += progress(speed_rows(synths, runs))
    if "diff" not in args.skip:
        rows += progress(diff_rows(synths))
    notes: list[str] = []
    cpu_s = next((v for k, v in rows if k.strip().startswith("CPU-s per audio s, en 130")), None)
    if "limit" not in args.skip and cpu_s:
        more, notes = limit_rows(cpu_s)
        rows += progress(more)
    if "quality" not in args.skip:
        rows += progress(quality_rows(synths, n))
    if "rss" not in args.skip:
        rows += progress(rss_rows())
    print_table(rows)
    for note in notes:
        print(note)
    load1 = psutil.getloadavg()
    print(f"load average at the end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    main()
