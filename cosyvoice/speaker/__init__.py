"""cosyvoice.speaker: prompt-audio validation, voice activity detection, speaker embedding.

Names are imported on first use (PEP 562), so ``import cosyvoice.speaker`` pulls in neither
torch nor onnxruntime.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SpeakerEncoder": "encoder",
    "EncoderConfig": "encoder",
    "cosine": "encoder",
    "SileroVad": "vad",
    "VadConfig": "vad",
    "PromptLimits": "validation",
    "PromptAudio": "validation",
    "validate_prompt": "validation",
    "LruCache": "cache",
    "EmbeddingCache": "cache",
    "embed_cached": "cache",
    "audio_key": "cache",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
