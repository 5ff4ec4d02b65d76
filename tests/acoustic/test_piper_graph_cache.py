"""PiperEnglish keeps onnxruntime's optimized graph: same samples, damaged file rebuilt."""

from __future__ import annotations

import numpy as np

from cosyvoice.acoustic.piper_en import PiperEnglish

TEXT = "Good morning, this is a test."


def test_cached_graph_gives_the_same_samples_and_survives_damage(tmp_path):
    reference = PiperEnglish.load().synthesize(TEXT, seed=0).wav
    first = PiperEnglish.load(cache_dir=tmp_path)
    files = list(tmp_path.glob("*.onnx"))
    assert len(files) == 1 and files[0].stat().st_size > 1_000_000
    assert not list(tmp_path.glob("*.tmp"))
    again = PiperEnglish.load(cache_dir=tmp_path)  # from the cached graph
    for model in (first, again):
        assert np.array_equal(model.synthesize(TEXT, seed=0).wav, reference)
    files[0].write_bytes(b"not an onnx graph")
    rebuilt = PiperEnglish.load(cache_dir=tmp_path)
    assert np.array_equal(rebuilt.synthesize(TEXT, seed=0).wav, reference)
    assert files[0].stat().st_size > 1_000_000
