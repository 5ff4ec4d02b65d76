"""Build what serves requests, the same way for the app and the CLI: the shared stages'
models (prompt VAD, speaker encoder) and every served engine's (the offline engine always, a
CosyVoice engine for ``--model-dir``; :func:`~cosyvoice.engine.registry.served_engines`), one
ModelManager over them all, the engines bound to it by name, and the Synthesizer on top.
Nothing loads here (models load on first use or when the app preloads them)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from cosyvoice.engine.base import Engine
from cosyvoice.engine.registry import engine_factory, served_engines
from cosyvoice.lifecycle.drain import RequestTracker
from cosyvoice.lifecycle.manager import ModelManager, ModelSpec
from cosyvoice.pipeline import Synthesizer
from cosyvoice.settings import Settings

logger = logging.getLogger(__name__)


def _load_encoder(device: str):
    from cosyvoice.speaker.encoder import SpeakerEncoder

    return SpeakerEncoder.load(device=device)


def _load_vad(device: str):
    from cosyvoice.speaker.vad import SileroVad

    return SileroVad.load()


def _asr_loader(settings: Settings):
    def load(device: str):
        from cosyvoice.asr.transcriber import Transcriber

        return Transcriber.load(settings.models_dir, settings.asr_model, device,
                                settings.torch_threads)

    return load


def shared_specs(settings: Settings) -> list[ModelSpec]:
    """Models of the shared stages: prompt validation's VAD; the speaker encoder, needed
    only for similarity readings (not required for ready); the prompt transcriber (not
    required, loaded on first use only)."""
    return [ModelSpec("vad", _load_vad, "Silero VAD (prompt validation)"),
            ModelSpec("speaker_encoder", _load_encoder, "GE2E speaker encoder (Resemblyzer)",
                      required=False),
            ModelSpec("asr", _asr_loader(settings), "Whisper prompt transcriber "
                      "(faster-whisper)", required=False, lazy=True)]


@dataclass
class Services:
    manager: ModelManager
    engine: Engine  # the default engine (``settings.engine``)
    synth: Synthesizer
    engines: dict[str, Engine]  # every served engine by name, the default first


def build(settings: Settings, device: str, tracker: RequestTracker | None = None) -> Services:
    """Every served engine with its models and the shared ones in one manager (engine
    models first, the default engine's first, in their load order). ValueError for an
    unknown engine."""
    names = served_engines(settings)
    factories = {name: engine_factory(settings, name) for name in names}
    specs = {name: f.model_specs(settings) for name, f in factories.items()}
    manager = ModelManager(device, [*(s for group in specs.values() for s in group),
                                    *shared_specs(settings)])
    engines = {name: f.create(manager, settings) for name, f in factories.items()}
    models = {name: [s.name for s in group] for name, group in specs.items()}
    synth = Synthesizer(engines, manager, settings, tracker=tracker, engine_models=models)
    return Services(manager, engines[names[0]], synth, engines)


def warm_engine(engine: Engine) -> None:
    """The engine's one-time work (e.g. measuring its voices), before the app says ready,
    so that no request pays for it; a failure is logged and left to the first request."""
    t0 = time.perf_counter()
    try:
        engine.warm()
    except Exception:  # a model that failed to load is reported by /health already
        logger.exception("warming the %s engine failed", engine.capabilities.name)
        return
    logger.info("%s engine warmed in %.1f s", engine.capabilities.name,
                time.perf_counter() - t0)


def preload_required(services: Services) -> None:
    """Load the models readiness waits for (in parallel) and warm the offline engine (or
    the default one where the offline engine is not served)."""
    manager = services.manager
    manager.load_many([m["name"] for m in manager.states() if m["required"]])
    warm_engine(services.engines.get("offline", services.engine))


def preload_optional(services: Services) -> None:
    """Load the optional models (a CosyVoice folder, the speaker encoder; not the lazy
    ones, such as the recognizer, loaded on first use) and warm the engines other than the
    offline one."""
    manager = services.manager
    manager.load_many([m["name"] for m in manager.states()
                       if not m["required"] and not m["lazy"]])
    for engine in services.engines.values():
        if engine is not services.engines.get("offline"):
            warm_engine(engine)
