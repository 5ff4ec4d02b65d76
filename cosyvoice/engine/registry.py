"""Which engines this install has: built-in ones by name, plus plugins named in settings
(``--engine-plugins NAME=module:factory``; the factory is an
:class:`~cosyvoice.engine.base.EngineFactory` or a callable returning one), and which of them
the app serves (:func:`served_engines`: the offline engine always, the one ``--engine`` names,
and a CosyVoice engine when ``--model-dir`` is given). Importing this module loads no model
and no heavy library."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

from cosyvoice.engine.base import EngineFactory
from cosyvoice.settings import Settings, env_name

logger = logging.getLogger(__name__)

OFFLINE = "offline"  # the embedded default: always served, the fallback of a failed engine
BUILTIN = {OFFLINE: "cosyvoice.engine.offline:FACTORY",
           "cosyvoice2": "cosyvoice.engine.cosyvoice:FACTORY_V2",
           "cosyvoice3": "cosyvoice.engine.cosyvoice:FACTORY_V3"}
COSYVOICE_ENGINES = {2: "cosyvoice2", 3: "cosyvoice3"}


def _load(target: str) -> EngineFactory:
    module, _, attr = target.partition(":")
    try:
        obj = getattr(importlib.import_module(module), attr or "FACTORY")
    except (ImportError, AttributeError) as e:
        raise ValueError(f"engine {target!r} cannot be loaded: {e}") from e
    factory = obj if isinstance(obj, EngineFactory) else obj()
    if not isinstance(factory, EngineFactory):
        raise ValueError(f"engine {target!r} is not an EngineFactory")
    return factory


def available(settings: Settings) -> dict[str, str]:
    """Engine name → ``module:factory``, built-ins first."""
    engines = dict(BUILTIN)
    for item in filter(None, (p.strip() for p in settings.engine_plugins.split(","))):
        name, sep, target = item.partition("=")
        if not sep or not name.strip() or ":" not in target:
            raise ValueError(f"engine plugin {item!r}: write NAME=module:factory in "
                             f"{env_name('engine_plugins')}")
        engines[name.strip()] = target.strip()
    return engines


def engine_factory(settings: Settings, name: str | None = None) -> EngineFactory:
    """The factory of ``name`` (default ``settings.engine``); ValueError naming the choices
    if unknown."""
    name = name or settings.engine
    engines = available(settings)
    if name not in engines:
        raise ValueError(f"unknown engine {name!r}; available: {', '.join(engines)}")
    return _load(engines[name])


def folder_engine(model_dir: str) -> str:
    """The CosyVoice engine of a model folder, read from its YAML's name (cosyvoice2.yaml or
    cosyvoice3.yaml); cosyvoice3 when neither is there (loading it then names what is
    missing)."""
    folder = Path(model_dir).expanduser()
    for version, name in sorted(COSYVOICE_ENGINES.items(), reverse=True):
        if (folder / f"cosyvoice{version}.yaml").is_file():
            return name
    logger.warning("%s holds neither cosyvoice2.yaml nor cosyvoice3.yaml; serving it as "
                   "cosyvoice3 (pass --engine cosyvoice2 for a CosyVoice2 folder)", folder)
    return COSYVOICE_ENGINES[3]


def served_engines(settings: Settings) -> list[str]:
    """The engines the app serves, the default (``settings.engine``) first: the offline engine
    always; a CosyVoice engine for ``--model-dir`` (its version from ``--engine`` when that
    names one, else from the folder's YAML). ValueError for an unknown ``--engine``."""
    engines = available(settings)
    if settings.engine not in engines:
        raise ValueError(f"unknown engine {settings.engine!r}; available: "
                         f"{', '.join(engines)}")
    names = [settings.engine]
    if settings.model_dir and settings.engine not in COSYVOICE_ENGINES.values():
        names.append(folder_engine(settings.model_dir))
    names.append(OFFLINE)
    return list(dict.fromkeys(names))
