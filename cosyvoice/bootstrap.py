"""Build what serves requests, the same way for the app and the CLI: the shared stages'
models (prompt VAD, speaker encoder) and the engine's, one ModelManager over them, the
engine bound to it, and the Synthesizer on top. Nothing loads here (models load on
first use or when the app preloads them)."""

from __future__ import annotations

from dataclasses import dataclass

from cosyvoice.engine.base import Engine
from cosyvoice.engine.registry import engine_factory
from cosyvoice.lifecycle.drain import RequestTracker
from cosyvoice.lifecycle.manager import ModelManager, ModelSpec
from cosyvoice.pipeline import Synthesizer
from cosyvoice.settings import Settings


def _load_encoder(device: str):
    from cosyvoice.speaker.encoder import SpeakerEncoder

    return SpeakerEncoder.load(device=device)


def _load_vad(device: str):
    from cosyvoice.speaker.vad import SileroVad

    return SileroVad.load()


def shared_specs() -> list[ModelSpec]:
    """Models of the shared stages: prompt validation's VAD; the speaker encoder, needed
    only for similarity readings (not required for ready)."""
    return [ModelSpec("vad", _load_vad, "Silero VAD (prompt validation)"),
            ModelSpec("speaker_encoder", _load_encoder, "GE2E speaker encoder (Resemblyzer)",
                      required=False)]


@dataclass
class Services:
    manager: ModelManager
    engine: Engine
    synth: Synthesizer


def build(settings: Settings, device: str, tracker: RequestTracker | None = None) -> Services:
    """The engine named by ``settings.engine`` with its models and the shared ones in one
    manager (engine models first, in their load order). ValueError for an unknown engine."""
    factory = engine_factory(settings)
    manager = ModelManager(device, [*factory.model_specs(settings), *shared_specs()])
    engine = factory.create(manager, settings)
    return Services(manager, engine, Synthesizer(engine, manager, settings, tracker=tracker))
