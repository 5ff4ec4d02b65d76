"""How Kokoro's graph runs on CPU: whole in onnxruntime, or split around its generator.

``kokoro_path`` (settings, ``--kokoro-path``):

* ``onnx``: the shipped int8 graph whole in onnxruntime — the reference every other path
  is checked against (``bench/kokoro_speed.py``), and the path on CUDA;
* ``int8`` / ``fp32``: the graph's front and back in onnxruntime, its generator in torch
  (:class:`~cosyvoice.acoustic.kokoro_generator.KokoroGenerator`) with oneDNN int8 or
  float32 convs;
* ``auto`` (default): ``int8`` where the CPU has int8 dot products (AVX-512 VNNI,
  AVX-VNNI, AMX: the vocoder's rule, :func:`~cosyvoice.kernels.cpu.has_int8_dot`),
  else ``onnx``: without them oneDNN's int8 convs were slower than its float32 ones for the
  vocoder, and the float32 generator was not faster than the int8 graph here (Zen 4,
  ``bench/kokoro_speed.py``); not measured on an AVX2-only CPU.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from cosyvoice.errors import ModelError
from cosyvoice.kernels.thread import on_kernel_thread

logger = logging.getLogger(__name__)

PATHS = ("auto", "int8", "fp32", "onnx")


def resolve_path(path: str, device: str = "cpu", cpuinfo: str | None = None) -> str:
    """``auto`` → ``int8`` on a CPU with int8 dot products, else ``onnx``; CUDA → ``onnx``."""
    from cosyvoice.kernels.cpu import has_int8_dot

    if path not in PATHS:
        raise ValueError(f"unknown Kokoro path {path!r}; use {', '.join(PATHS)}")
    if device.startswith("cuda"):
        return "onnx"
    if path != "auto":
        return path
    return "int8" if has_int8_dot(cpuinfo) else "onnx"


class SplitKokoro:
    """The graph's front and back in onnxruntime, the generator in torch between them.
    ``run(feed)`` answers like the whole graph's session: ``[audio (1, T)]``."""

    def __init__(self, front, generator, back) -> None:
        self.front, self.generator, self.back = front, generator, back
        self._back_input = back.get_inputs()[0].name

    @classmethod
    def load(cls, path: str | Path, options, precision: str) -> SplitKokoro:
        """Build the generator and its kernels from the parts kept beside the model
        (:mod:`~cosyvoice.acoustic.kokoro_parts`), or from the graph at ``path``, read and
        cut (~1 s more), keeping the parts for the next load."""
        import onnxruntime as ort

        from cosyvoice.acoustic.kokoro_generator import KokoroGenerator
        from cosyvoice.acoustic.kokoro_parts import read_parts

        def build(graph) -> KokoroGenerator:  # torch's work: the kernel thread
            generator = KokoroGenerator(graph, precision)
            generator.warm_up()
            return generator

        path = Path(path).resolve()  # a linked model file: its parts beside the real one
        parts = read_parts(path)
        generator = None
        if parts is not None:
            try:
                generator = on_kernel_thread(build, parts.graph)
                front, back = str(parts.front), str(parts.back)
            except ModelError as e:  # a recording that does not answer: read the graph
                logger.info("%s", e)
        if generator is None:
            generator, front, back = cls._from_graph(path, build)
        providers = ["CPUExecutionProvider"]
        return cls(ort.InferenceSession(front, options, providers=providers), generator,
                   ort.InferenceSession(back, options, providers=providers))

    @staticmethod
    def _from_graph(path: Path, build):
        """``(generator, front bytes, back bytes)`` from the graph itself; the parts kept."""
        from cosyvoice.acoustic.kokoro_graph import KokoroGraph
        from cosyvoice.acoustic.kokoro_parts import RecordingGraph, write_parts

        graph = RecordingGraph(KokoroGraph.load(path))
        front, back = graph.graph.split()
        generator = on_kernel_thread(build, graph)
        write_parts(path, front, back, graph.answers)
        return generator, front, back

    def run(self, _outputs, feed: dict) -> list[np.ndarray]:
        features, harmonics, style = self.front.run(None, feed)
        post = on_kernel_thread(self.generator, features, harmonics, style)
        return self.back.run(None, {self._back_input: post})


def make_session(path: Path, options, device: str, kokoro_path: str):
    """The object :class:`~cosyvoice.acoustic.kokoro.KokoroModel` runs (``.run(None,
    feed)``) for ``kokoro_path``: a :class:`SplitKokoro`, or the whole graph's session
    (also when the split fails to build: logged, the reference still speaks)."""
    import onnxruntime as ort

    chosen = resolve_path(kokoro_path, device)
    if chosen != "onnx":
        try:
            return SplitKokoro.load(path, options, chosen), chosen
        except (ModelError, ImportError, RuntimeError) as e:
            logger.warning("Kokoro's %s path did not build (%s); running the whole graph in "
                           "onnxruntime", chosen, e)
    cuda = device.startswith("cuda")
    providers = ["CUDAExecutionProvider"] if cuda else ["CPUExecutionProvider"]
    try:
        return ort.InferenceSession(str(path), options, providers=providers), "onnx"
    except Exception as e:  # onnxruntime raises its own types
        raise ModelError(f"could not load {path.name}: {e}") from e
