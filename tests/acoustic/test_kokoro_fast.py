"""Kokoro's CPU path (the graph cut around its generator, the generator in torch) against the
plain onnxruntime run of the shipped graph, with the real files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cosyvoice.acoustic.kokoro_fast import resolve_path
from tests.conftest import require_kokoro

EN = "The quick brown fox jumps over the lazy dog near the river bank."
ZH = "今天早上天气很好，我们一起去公园散步。"
VNNI = "flags\t\t: fpu sse avx2 avx512f avx512_vnni\n"
AVX2 = "flags\t\t: fpu sse avx2 fma\n"


def test_the_path_follows_the_cpu():
    assert resolve_path("auto", "cpu", VNNI) == "int8"
    assert resolve_path("auto", "cpu", AVX2) == "onnx"  # no int8 dot products: the graph
    assert resolve_path("fp32", "cpu", AVX2) == "fp32"
    assert resolve_path("int8", "cuda:0", VNNI) == "onnx"
    with pytest.raises(ValueError, match="auto, int8, fp32, onnx"):
        resolve_path("fast", "cpu")


@pytest.fixture(scope="module")
def graph():
    from cosyvoice.acoustic.kokoro_graph import KokoroGraph

    return KokoroGraph.load(require_kokoro() / "kokoro-v1.0.int8.onnx")


@pytest.fixture(scope="module")
def models():
    from cosyvoice.acoustic.kokoro import KokoroModel

    folder = require_kokoro()
    return {p: KokoroModel.load(folder, path=p) for p in ("onnx", "int8")}


def _snr_db(ref: np.ndarray, out: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((ref - out) ** 2)))


@pytest.mark.slow
def test_the_float_generator_is_the_graphs_maths(graph):
    """The torch generator with float32 convs against onnxruntime running the same
    generator as a float graph (the shipped one's weights dequantised): float rounding
    only (measured 1.1e-4 on outputs up to 52: 2e-6 of the largest)."""
    import onnxruntime as ort
    from onnx.utils import Extractor

    from cosyvoice.acoustic.kokoro_generator import KokoroGenerator
    from cosyvoice.acoustic.kokoro_graph import FEATURES, HARMONICS, POST, STYLE, KokoroGraph

    front_bytes, _ = graph.split()
    sub = Extractor(graph.model).extract_model([FEATURES, HARMONICS, STYLE], [POST])
    reference = ort.InferenceSession(KokoroGraph(sub).dequantized().SerializeToString(),
                                     providers=["CPUExecutionProvider"])
    front = ort.InferenceSession(front_bytes, providers=["CPUExecutionProvider"])
    folder = require_kokoro()
    vocab = json.loads((folder / "vocab.json").read_text("utf-8"))["vocab"]
    ids = [vocab[c] for c in "həlˈO wˈɜɹld"]
    pack = np.fromfile(folder / "voices" / "af_heart.bin", "<f4").reshape(510, 256)
    feed = {"tokens": np.array([[0, *ids, 0]], np.int64),
            "style": pack[len(ids) - 1][None], "speed": np.array([1.0], np.float32)}
    features, harmonics, style = front.run(None, feed)
    want = reference.run(None, {FEATURES: features, HARMONICS: harmonics, STYLE: style})[0]
    got = KokoroGenerator(graph, "fp32")(features, harmonics, style)
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-4 * np.abs(want).max()


@pytest.mark.slow
@pytest.mark.parametrize("voice, text", [("af_heart", EN), ("zm_yunxi", ZH)])
def test_the_default_voices_stay_close_to_the_reference(models, voice, text):
    """The int8 path keeps the graph's durations (the same length) and stays as close to
    the shipped graph as the graph is to its own float weights. Measured on 6 sentences
    per voice (bench/kokoro_speed.py --closeness): int8 path vs graph 17.0–18.4 dB SNR
    (af_heart), 13.9–17.3 dB (zm_yunxi), log-mel L1 0.088–0.100; the float weights vs the
    graph 16.2–17.4 and 13.0–15.6 dB, L1 0.093–0.111. Bounds: 12 dB and L1 0.13."""
    from cosyvoice.audio.io import resample
    from cosyvoice.audio.mel import MelAnalyzer

    ref = models["onnx"].speaker(voice).synthesize(text).wav
    out = models["int8"].speaker(voice).synthesize(text).wav
    assert models["int8"].path == "int8" and len(out) == len(ref)
    assert _snr_db(ref, out) > 12.0
    mel = MelAnalyzer()
    l1 = float((mel(resample(ref, 24000, 22050)) - mel(resample(out, 24000, 22050))).abs()
               .mean())
    assert l1 < 0.13, l1
    assert np.array_equal(models["int8"].speaker(voice).synthesize(text).wav, out)


@pytest.mark.slow
def test_a_new_length_builds_no_conv_kernel(models):
    """Every oneDNN conv runs on fixed-shape tiles built at load: requests of new lengths
    leave the process's memory where it was (a new shape would cost ~3 MB per conv, over
    100 MB per new length; the bound leaves room for the allocator in a shared worker, where
    CI saw +46 MB with a 40 MB bound)."""
    import psutil

    sp = models["int8"].speaker("af_heart")
    # the allocator's own growth settles over the first requests (other tests in this
    # process may have left arenas of other sizes); kernels are what new lengths would add
    for text in ("One more.", "Two sentences of a middling length, to settle the heap."):
        sp.synthesize(text)
    before = psutil.Process().memory_info().rss
    for text in ("A short one.", "A sentence of another length, spoken once.",
                 "And a third sentence, longer than both of the others before it."):
        sp.synthesize(text)
    assert psutil.Process().memory_info().rss - before < 80 * 2**20


@pytest.mark.slow
def test_no_conv_kernel_is_built_after_the_warm_up(capfd):
    """The load's warm-up (each stage on silence just long enough) builds every oneDNN conv
    kernel: requests of new lengths, short and long, are all cache hits (oneDNN's verbose
    log names each kernel it builds, ``create:cache_miss``). A fresh model: the module's
    ones have spoken already, which would hide a kernel the warm-up missed."""
    import re

    import torch

    from cosyvoice.acoustic.kokoro import KokoroModel

    sp = KokoroModel.load(require_kokoro(), path="int8").speaker("af_heart")
    capfd.readouterr()
    with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON_CREATION):
        for text in ("Hi.", EN, EN + " " + EN + " And one more clause, to make it long."):
            sp.synthesize(text)
    log = capfd.readouterr().out
    assert "onednn_verbose" in log and "cache_hit" in log  # the log is really on
    misses = [line for line in log.splitlines()
              if re.search(r"create:cache_miss.*convolution", line)]
    assert not misses, f"{len(misses)} kernels built after warm-up, e.g. {misses[0][:300]}"


@pytest.mark.slow
def test_the_kept_parts_speak_as_the_graph_and_stale_or_damaged_ones_are_not_read(tmp_path):
    """The first load of a model file reads and cuts its graph and keeps what it read
    (``fast-parts/``); a second load builds from those parts, bit for bit the same audio.
    Parts of another model file (here: the same file touched) or damaged ones are not read
    (a load then reads the graph, as the first one did)."""
    import os
    import shutil

    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.acoustic.kokoro_parts import FOLDER, read_parts

    src = require_kokoro()
    folder = tmp_path / "kokoro"
    folder.mkdir()
    model = folder / "kokoro-v1.0.int8.onnx"
    shutil.copyfile(src / model.name, model)  # a copy: its parts land in tmp_path
    (folder / "vocab.json").symlink_to(src / "vocab.json")
    (folder / "voices").symlink_to(src / "voices", target_is_directory=True)
    phonemes = "ðə kwˈɪk bɹˈaʊn fˈɑks."

    def speak() -> np.ndarray:
        m = KokoroModel.load(folder, path="int8")
        return m.infer(phonemes, "af_heart")

    assert read_parts(model) is None
    first = speak()
    assert read_parts(model) is not None
    assert np.array_equal(speak(), first)  # built from the parts
    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 10**9))
    assert read_parts(model) is None  # another model file now: stale
    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns - 10**9))
    assert read_parts(model) is not None
    (folder / FOLDER / "generator.pt").write_bytes(b"damaged")
    assert read_parts(model) is None
