"""What Kokoro's fast CPU path reads of the shipped graph, kept beside the model.

:class:`~cosyvoice.acoustic.kokoro_fast.SplitKokoro` needs the graph's front and back (two
smaller ONNX graphs) and the generator's weights. Getting them means importing the ``onnx``
package, parsing the 88 MB graph and cutting it: about half of a 2.2 s load on 2 Zen 4 cores
(``onnx``'s import alone is 0.65 s, most of it ``ml_dtypes``). The first load writes what it
read into ``<model folder>/fast-parts/`` (``front.onnx``, ``back.onnx``, ``generator.pt``: the
graph's answers to the generator's questions, as plain tensors and numbers); later loads read
those instead. They are keyed on the model file (name, size, modification time) and on
:data:`VERSION`; a stale, damaged or unwritable folder only means the graph is read again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cosyvoice.acoustic.kokoro_graph import KokoroGraph, conv1d, conv_transpose1d
from cosyvoice.errors import ModelError
from cosyvoice.files import write_atomic

logger = logging.getLogger(__name__)

FOLDER = "fast-parts"
VERSION = 1  # bump when what the generator reads of the graph, or how, changes


def _key(method: str, *args: Any) -> str:
    return "|".join((method, *map(str, args)))


class RecordingGraph:
    """Answers the generator's questions from the graph and keeps each answer."""

    def __init__(self, graph: KokoroGraph) -> None:
        self.graph = graph
        self.answers: dict[str, Any] = {}

    def has(self, name: str) -> bool:
        self.answers[_key("has", name)] = answer = self.graph.has(name)
        return answer

    def leaky_slope(self, name: str) -> float:
        self.answers[_key("leaky_slope", name)] = answer = self.graph.leaky_slope(name)
        return answer

    def pad_left(self, name: str) -> int:
        self.answers[_key("pad_left", name)] = answer = self.graph.pad_left(name)
        return answer

    def array(self, name: str) -> np.ndarray:
        answer = self.graph.array(name)
        self.answers[_key("array", name)] = torch.from_numpy(np.array(answer))
        return answer

    def linear(self, prefix: str, bias: str) -> tuple[np.ndarray, np.ndarray]:
        w, b = self.graph.linear(prefix, bias)
        self.answers[_key("linear", prefix, bias)] = [torch.from_numpy(np.array(w)),
                                                      torch.from_numpy(np.array(b))]
        return w, b

    def conv(self, prefix: str):
        c = self.graph.conv(prefix)
        self.answers[_key("conv", prefix)] = {
            "weight": c.weight.detach().clone(),
            "bias": None if c.bias is None else c.bias.detach().clone(),
            "stride": c.stride[0], "padding": c.padding[0], "dilation": c.dilation[0]}
        return c

    def conv_transpose(self, prefix: str):
        c = self.graph.conv_transpose(prefix)
        self.answers[_key("conv_transpose", prefix)] = {
            "weight": c.weight.detach().clone(), "bias": c.bias.detach().clone(),
            "stride": c.stride[0], "padding": c.padding[0]}
        return c


class RecordedGraph:
    """Answers the generator's questions from a recording; a question it has no answer for
    is a :class:`ModelError` (the recording is stale: the graph is read instead)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def _get(self, method: str, *args: Any) -> Any:
        try:
            return self.answers[_key(method, *args)]
        except KeyError:
            raise ModelError(f"Kokoro's fast parts have no answer for {method}{args}") from None

    def has(self, name: str) -> bool:
        return bool(self._get("has", name))

    def leaky_slope(self, name: str) -> float:
        return float(self._get("leaky_slope", name))

    def pad_left(self, name: str) -> int:
        return int(self._get("pad_left", name))

    def array(self, name: str) -> np.ndarray:
        return self._get("array", name).numpy()

    def linear(self, prefix: str, bias: str) -> tuple[np.ndarray, np.ndarray]:
        w, b = self._get("linear", prefix, bias)
        return w.numpy(), b.numpy()

    def conv(self, prefix: str):
        c = self._get("conv", prefix)
        return conv1d(c["weight"].numpy(), None if c["bias"] is None else c["bias"].numpy(),
                      c["stride"], c["padding"], c["dilation"])

    def conv_transpose(self, prefix: str):
        c = self._get("conv_transpose", prefix)
        return conv_transpose1d(c["weight"].numpy(), c["bias"].numpy(), c["stride"],
                                c["padding"])


@dataclass
class Parts:
    front: Path
    back: Path
    graph: RecordedGraph


def model_key(model: Path) -> dict:
    st = model.stat()
    return {"version": VERSION, "model": model.name, "size": st.st_size,
            "mtime_ns": st.st_mtime_ns}


def read_parts(model: Path) -> Parts | None:
    """The parts kept for ``model``, or None (absent, stale or unreadable: logged)."""
    folder = model.parent / FOLDER
    try:
        if json.loads((folder / "key.json").read_text("utf-8")) != model_key(model):
            logger.info("Kokoro's fast parts in %s are for another model file; reading the "
                        "graph", folder)
            return None
        answers = torch.load(folder / "generator.pt", weights_only=True)
    except FileNotFoundError:
        return None
    except Exception as e:  # noqa: BLE001 - damaged parts: read the graph instead
        logger.warning("Kokoro's fast parts in %s are unreadable (%s); reading the graph",
                       folder, e)
        return None
    front, back = folder / "front.onnx", folder / "back.onnx"
    if not (front.is_file() and back.is_file() and isinstance(answers, dict)):
        return None
    return Parts(front, back, RecordedGraph(answers))


def write_parts(model: Path, front: bytes, back: bytes, answers: dict[str, Any]) -> None:
    """Keep the parts for ``model`` (each file written whole, the key last); a folder that
    cannot be written (a read-only models folder) is logged and left alone."""
    folder = model.parent / FOLDER
    try:
        folder.mkdir(exist_ok=True)
        (folder / "key.json").unlink(missing_ok=True)  # parts and key never disagree
        for name, write in (("front.onnx", lambda f: f.write(front)),
                            ("back.onnx", lambda f: f.write(back)),
                            ("generator.pt", lambda f: torch.save(answers, f)),
                            ("key.json", lambda f: f.write(
                                json.dumps(model_key(model)).encode()))):
            # remade from the model if lost: no fsync; readable as the model file is
            write_atomic(folder / name, write, durable=False, mode=0o644)
        logger.info("kept Kokoro's fast parts in %s", folder)
    except OSError as e:
        logger.info("could not keep Kokoro's fast parts in %s (%s); each load reads the "
                    "graph", folder, e)
