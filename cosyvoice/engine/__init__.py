"""The Engine boundary (see :mod:`cosyvoice.engine.base`) and the engines this install
has (:mod:`cosyvoice.engine.registry`)."""

from cosyvoice.engine.base import (
    Capabilities,
    Engine,
    EngineChunk,
    EngineFactory,
    EngineRequest,
)

__all__ = ["Capabilities", "Engine", "EngineChunk", "EngineFactory", "EngineRequest"]
