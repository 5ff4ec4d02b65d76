"""Kokoro's shipped int8 ONNX graph, read for the fast CPU path.

The graph is cut around its iSTFTNet generator (``/decoder/decoder/generator/``), which
takes ~86 % of its time on CPU (onnxruntime's profiler, 2026-12-07, Zen 4): the **front**
(text encoder, BERT, duration and F0 predictors, the decoder's first blocks and the
harmonic source's STFT) and the **back** (the inverse STFT) stay onnxruntime graphs, cut
out of the shipped one unchanged; the generator's convolutions in between run in torch
(:mod:`cosyvoice.acoustic.kokoro_generator`) from weights read here, dequantised from the
graph's own int8 tensors (``(q - zero_point) · scale``), so no other weight file exists.

The cut points are tensor names of this export (kokoro-v1.0.int8.onnx); :meth:`KokoroGraph.split`
raises :class:`~cosyvoice.errors.ModelError` for a graph that lacks them, and the caller
falls back to the whole graph.
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import torch
from torch import nn

from cosyvoice.errors import ModelError

GENERATOR = "/decoder/decoder/generator/"
# The front's outputs: the decoder's features entering the generator (B, 512, T80),
# the harmonic source's STFT (B, 22, T4800 + 1) and the decoder's half of the style (B, 128).
FEATURES = "/decoder/decoder/decode.3/Div_4_output_0"
HARMONICS = GENERATOR + "Concat_3_output_0"
STYLE = "/decoder/Slice_output_0"
# The back's input: the generator's last conv, (B, 22, frames): log-magnitudes and phases.
POST = GENERATOR + "conv_post/Conv_output_0"


def conv1d(weight: np.ndarray, bias: np.ndarray | None, stride: int, padding: int,
           dilation: int) -> nn.Conv1d:
    """A float ``Conv1d`` holding ``weight (out, in, k)`` and ``bias``."""
    out_ch, in_ch, k = weight.shape
    conv = nn.Conv1d(in_ch, out_ch, k, stride=int(stride), padding=int(padding),
                     dilation=int(dilation), bias=bias is not None)
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(np.array(weight, np.float32)))
        if bias is not None:
            conv.bias.copy_(torch.from_numpy(np.array(bias, np.float32)))
    return conv.eval()


def conv_transpose1d(weight: np.ndarray, bias: np.ndarray, stride: int,
                     padding: int) -> nn.ConvTranspose1d:
    """A float ``ConvTranspose1d`` holding ``weight (in, out, k)`` and ``bias``."""
    in_ch, out_ch, k = weight.shape
    up = nn.ConvTranspose1d(in_ch, out_ch, k, stride=int(stride), padding=int(padding))
    with torch.no_grad():
        up.weight.copy_(torch.from_numpy(np.array(weight)))
        up.bias.copy_(torch.from_numpy(np.array(bias)))
    return up.eval()


class KokoroGraph:
    """The shipped graph's nodes and tensors by name (an ``onnx.ModelProto``)."""

    def __init__(self, model) -> None:
        from onnx import numpy_helper

        self.model = model
        self._to_array = numpy_helper.to_array
        graph = model.graph
        self.inits = {t.name: t for t in graph.initializer}
        self.nodes = {n.name: n for n in graph.node}
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list] = collections.defaultdict(list)
        for n in graph.node:
            for i in n.input:
                self.consumers[i].append(n)

    @classmethod
    def load(cls, path: str | Path) -> KokoroGraph:
        import onnx

        return cls(onnx.load(str(path)))

    # ---- the cut ------------------------------------------------------------------------
    def split(self) -> tuple[bytes, bytes]:
        """``(front, back)`` serialized graphs (see the module docstring)."""
        from onnx.utils import Extractor

        names = {FEATURES, HARMONICS, STYLE, POST}
        missing = sorted(n for n in names if n not in self.producer)
        if missing:
            raise ModelError(f"this Kokoro graph has no tensor {missing[0]}: not the "
                             "kokoro-v1.0 export the fast path reads")
        inputs = [i.name for i in self.model.graph.input]
        extractor = Extractor(self.model)
        front = extractor.extract_model(inputs, [FEATURES, HARMONICS, STYLE])
        back = extractor.extract_model([POST], [o.name for o in self.model.graph.output])
        if [i.name for i in back.graph.input] != [POST]:
            raise ModelError("Kokoro's inverse STFT reads more than the generator's output")
        return front.SerializeToString(), back.SerializeToString()

    # ---- tensors ------------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        try:
            return self._to_array(self.inits[name])
        except KeyError:
            raise ModelError(f"Kokoro graph: no tensor {name}") from None

    def node(self, name: str):
        node = self.nodes.get(name)
        if node is None:
            raise ModelError(f"Kokoro graph: no node {name}")
        return node

    def has(self, name: str) -> bool:
        return name in self.nodes or f"{name}_quant" in self.nodes

    @staticmethod
    def attrs(node) -> dict:
        from onnx import helper

        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def _dequantized(self, node, scale_of: str) -> tuple[np.ndarray, np.ndarray]:
        """``(q - zero point, weight scale)`` of an integer node (ConvInteger,
        MatMulInteger): the graph multiplies its output by ``x_scale · w_scale``, made by the
        Mul whose output is ``scale_of``; the weight scale is that Mul's initializer."""
        q = self.array(node.input[1]).astype(np.float32)
        if len(node.input) > 3 and node.input[3]:
            q = q - self.array(node.input[3]).astype(np.float32)
        mul = self.producer[scale_of]
        scales = [i for i in mul.input if i in self.inits]
        if mul.op_type != "Mul" or len(scales) != 1:
            raise ModelError(f"Kokoro graph: no weight scale for {node.name}")
        return q, self.array(scales[0]).astype(np.float32)

    def _after(self, node, op: str):
        nxt = self.consumers[node.output[0]]
        if len(nxt) != 1 or nxt[0].op_type != op:
            raise ModelError(f"Kokoro graph: {node.name} is not followed by {op}")
        return nxt[0]

    def conv(self, prefix: str) -> nn.Conv1d:
        """The ``Conv1d`` of node ``prefix`` (``…/convs1.0/Conv``), float or int8
        (``…/Conv_quant``: DynamicQuantizeLinear → ConvInteger → [+ int32 bias] → Cast →
        Mul(x_scale · w_scale)); the float bias is the one the int8 graph quantized."""
        node = self.nodes.get(prefix)
        if node is not None and node.op_type == "Conv":
            weight = self.array(node.input[1])
            bias = self.array(node.input[2]) if len(node.input) > 2 else None
        else:
            node = self.node(f"{prefix}_quant")
            after = self.consumers[node.output[0]]
            bias = None
            if len(after) == 1 and after[0].op_type == "Add":
                # the int32 bias: Add(Reshape(Cast(Floor(Div(bias, scale)))))
                chain = self.producer[after[0].input[1]]
                for _ in range(3):
                    chain = self.producer[chain.input[0]]
                bias = self.array(chain.input[0])
                cast = self._after(after[0], "Cast")
            else:
                cast = self._after(node, "Cast")
            q, scale = self._dequantized(node, self._after(cast, "Mul").input[1])
            weight = q * (scale.reshape(-1, 1, 1) if scale.ndim else scale)
        a = self.attrs(node)
        if a.get("group", 1) != 1 or len(set(a.get("pads", [0]))) > 1:
            raise ModelError(f"Kokoro graph: {prefix} is not a plain symmetric conv")
        return conv1d(np.array(weight, np.float32),
                      None if bias is None else bias.astype(np.float32),
                      a.get("strides", [1])[0], a.get("pads", [0])[0],
                      a.get("dilations", [1])[0])

    def conv_transpose(self, prefix: str) -> nn.ConvTranspose1d:
        """The float ``ConvTranspose1d`` of node ``prefix``."""
        node = self.node(prefix)
        a = self.attrs(node)
        return conv_transpose1d(self.array(node.input[1]), self.array(node.input[2]),
                                a["strides"][0], a["pads"][0])

    def linear(self, prefix: str, bias: str) -> tuple[np.ndarray, np.ndarray]:
        """``(weight (in, out), bias (out,))`` of the int8 Gemm at ``prefix``
        (``…/fc/Gemm``: MatMulInteger, per-column scales and zero points)."""
        node = self.node(f"{prefix}_MatMul_quant")
        mul = self._after(self._after(node, "Cast"), "Mul")
        q, scale = self._dequantized(node, mul.input[1])
        return q * scale, self.array(bias).astype(np.float32)

    def leaky_slope(self, name: str) -> float:
        return float(self.attrs(self.node(name))["alpha"])

    def pad_left(self, name: str) -> int:
        """The left padding of a reflection Pad on the time axis (``(1, 0)`` here)."""
        node = self.node(name)
        pads = self.array(node.input[1]).tolist()
        if self.attrs(node).get("mode") != b"reflect" or pads[-1] != 0 or any(pads[:2]) or any(
                pads[3:5]):
            raise ModelError(f"Kokoro graph: {name} is not a left reflection pad")
        return int(pads[2])

    # ---- a float copy ---------------------------------------------------------------------
    def dequantized(self):
        """A float32 copy of the graph (an ``onnx.ModelProto``): every integer node with its
        quantize/rescale chain becomes the float op on the dequantised weight (Conv,
        MatMul, LSTM, Gather). Not a serving path — onnxruntime ran it slower than the
        int8 graph here (``bench/kokoro_speed.py``) — but the reference the torch generator's
        float32 convs are checked against (tests/acoustic/test_kokoro_fast.py)."""
        import copy

        from onnx import helper, numpy_helper

        out = copy.deepcopy(self.model)
        inits: dict[str, np.ndarray] = {}
        replaced: dict[str, object] = {}  # name of the node a float node takes the place of
        dropped: set[str] = set()
        for node in self.model.graph.node:
            new = self._float_node(node, inits, dropped, helper)
            if new is not None:
                replaced[new[0]] = new[1]
        nodes = [replaced.get(n.name, n) for n in out.graph.node if n.name not in dropped
                 or n.name in replaced]
        needed = {o.name for o in out.graph.output}
        keep = []
        for n in reversed(nodes):  # drop what nothing reads any more
            if any(o in needed for o in n.output):
                keep.append(n)
                needed.update(n.input)
        out.graph.ClearField("node")
        out.graph.node.extend(reversed(keep))
        old = [t for t in out.graph.initializer if t.name in needed]
        out.graph.ClearField("initializer")
        out.graph.initializer.extend(old)
        out.graph.initializer.extend(numpy_helper.from_array(a, n) for n, a in inits.items())
        return out

    def _float_node(self, node, inits: dict, dropped: set, helper):
        """``(name of the node it replaces, float node)`` for an integer node, else None;
        the nodes its float version makes dead go into ``dropped``."""
        op = node.op_type
        if op == "ConvInteger":
            prefix = node.name[: -len("_quant")]
            conv = self.conv(prefix)
            name = f"{prefix}/weight_f32"
            inits[name] = conv.weight.detach().numpy()
            ins = [self.producer[node.input[0]].input[0], name]
            if conv.bias is not None:
                inits[f"{prefix}/bias_f32"] = conv.bias.detach().numpy()
                ins.append(f"{prefix}/bias_f32")
            last = self._rescale(node)
            new = helper.make_node("Conv", ins, list(last.output), name=prefix)
            new.attribute.extend(node.attribute)
            dropped.update({node.name, *(n.name for n in self._chain(node, last))})
            return last.name, new
        if op == "MatMulInteger":
            last = self._rescale(node)
            q, scale = self._dequantized(node, last.input[1])
            name = f"{node.name}/weight_f32"
            inits[name] = (q * scale).astype(np.float32)
            x = self.producer[node.input[0]].input[0]
            new = helper.make_node("MatMul", [x, name], list(last.output), name=node.name)
            dropped.update({node.name, *(n.name for n in self._chain(node, last))})
            return last.name, new
        if op == "DynamicQuantizeLSTM":
            x, wq, rq, b, lens, h0, c0, _, ws, wz, rs, rz = list(node.input)
            for q, s, z in ((wq, ws, wz), (rq, rs, rz)):
                w = (self.array(q).astype(np.float32) - self.array(z).astype(np.float32)
                     .reshape(-1, 1, 1)) * self.array(s).reshape(-1, 1, 1)
                inits[f"{q}_f32"] = np.ascontiguousarray(w.transpose(0, 2, 1), np.float32)
            new = helper.make_node("LSTM", [x, f"{wq}_f32", f"{rq}_f32", b, lens, h0, c0],
                                   list(node.output), name=node.name)
            new.attribute.extend(node.attribute)
            return node.name, new
        if op == "DequantizeLinear" and self.producer.get(node.input[0]) is not None:
            gather = self.producer[node.input[0]]
            if gather.op_type != "Gather" or gather.input[0] not in self.inits:
                return None
            zero = self.array(node.input[2]).astype(np.float32) if len(node.input) > 2 else 0
            table = (self.array(gather.input[0]).astype(np.float32) - zero) * self.array(
                node.input[1])
            inits[f"{gather.input[0]}_f32"] = table.astype(np.float32)
            new = helper.make_node("Gather", [f"{gather.input[0]}_f32", gather.input[1]],
                                   list(node.output), name=node.name)
            new.attribute.extend(gather.attribute)
            dropped.add(gather.name)
            return node.name, new
        return None

    def _rescale(self, node):
        """The Mul by ``x_scale · w_scale`` that ends an integer node's chain."""
        after = self.consumers[node.output[0]]
        nxt = after[0] if len(after) == 1 and after[0].op_type == "Add" else node
        return self._after(self._after(nxt, "Cast"), "Mul")

    def _chain(self, node, last) -> list:
        """The nodes from ``node`` (exclusive) to ``last`` (inclusive)."""
        out, cur = [], node
        while cur is not last:
            cur = self.consumers[cur.output[0]][0]
            out.append(cur)
        return out
