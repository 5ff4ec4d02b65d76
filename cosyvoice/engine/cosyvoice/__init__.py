"""The CosyVoice engine: a released CosyVoice2 / Fun-CosyVoice3 folder run by our own runtime
(:mod:`cosyvoice.runtime`), registered as the built-in engines ``cosyvoice2`` and
``cosyvoice3``.

Importing this package loads no model and no torch: the capabilities are data, the model spec
and the builder import the runtime when called. One managed model per engine, named as the
engine (``cosyvoice2`` / ``cosyvoice3``), loaded by ``CosyVoiceSynth.load(folder, version,
device)`` from the folder in ``--model-dir`` or the one an admin points it at at run time
(:meth:`~cosyvoice.lifecycle.manager.ModelManager.load_from`). It is not required for
readiness: a bad folder leaves it FAILED with the folder error and the offline engine serving.

The preset voices are the folder's ``spk2info.pt`` speakers, read when the folder is chosen
(:func:`folder_speakers`); a folder without them offers no preset mode.
"""

from __future__ import annotations

import logging
from pathlib import Path

from cosyvoice.engine.base import Capabilities, EngineFactory

logger = logging.getLogger(__name__)

SAMPLE_RATE = 24000  # both released versions; the loaded folder's YAML has the last word
# What each version speaks (the released model cards); the frontend's text checks apply first.
LANGUAGES = {2: ("zh", "en", "ja", "ko", "yue"),
             3: ("zh", "en", "ja", "ko", "yue", "de", "es", "fr", "it", "ru")}
LABELS = {2: "CosyVoice2 (released folder, our runtime)",
          3: "Fun-CosyVoice3 (released folder, our runtime)"}


def capabilities(version: int, speakers: tuple[str, ...] = ()) -> Capabilities:
    """The engine's capabilities; ``speakers``: the folder's spk2info voices (preset mode
    is offered only with them; instruct then also speaks one when no prompt is given)."""
    return Capabilities(
        name=f"cosyvoice{version}",
        label=LABELS[version],
        modes=(("preset",) if speakers else ()) + ("clone", "cross_lingual", "instruct"),
        languages=LANGUAGES[version],
        voices={s: f"{s} · spk2info" for s in speakers},
        default_voice=speakers[0] if speakers else "",
        sample_rate=SAMPLE_RATE,
        prompt_modes=("clone", "cross_lingual"),
        transcript_modes=("clone",),
        voice_modes=("preset", "instruct"),
        streaming=True,
        instructions=True,
        seed_deterministic=True,
        saved_voices=True,
        cloning="model",  # zero-shot from the prompt (and its transcript); no strength
    )


def folder_speakers(model_dir: str) -> tuple[str, ...]:
    """The speaker names in ``model_dir/spk2info.pt`` (none when it is missing or
    unreadable; loading the folder reports what is wrong with it)."""
    path = Path(model_dir).expanduser() / "spk2info.pt" if model_dir else None
    if path is None or not path.is_file():
        return ()
    try:
        import torch

        info = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a broken file: no preset voices, the load names the problem
        logger.warning("cannot read the speakers of %s: %s", path, e)
        return ()
    return tuple(str(k) for k in info) if isinstance(info, dict) else ()


def _factory(version: int) -> EngineFactory:
    def specs(settings):
        from cosyvoice.engine.cosyvoice.engine import model_spec

        return [model_spec(version, settings.model_dir, settings.cosyvoice_dtype)]

    def build(manager, settings):
        from cosyvoice.engine.cosyvoice.engine import CosyVoiceEngine

        return CosyVoiceEngine(manager, version)

    def configured(settings) -> Capabilities:
        return capabilities(version, folder_speakers(settings.model_dir))

    return EngineFactory(capabilities(version), specs, build, configured)


FACTORY_V2 = _factory(2)
FACTORY_V3 = _factory(3)

__all__ = ["FACTORY_V2", "FACTORY_V3", "capabilities", "folder_speakers"]
