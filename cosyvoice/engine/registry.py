"""Which engines this install has: built-in ones by name, plus plugins named in settings
(``--engine-plugins NAME=module:factory``; the factory is an
:class:`~cosyvoice.engine.base.EngineFactory` or a callable returning one). Importing this
module loads no model and no heavy library."""

from __future__ import annotations

import importlib

from cosyvoice.engine.base import EngineFactory
from cosyvoice.settings import Settings, env_name

BUILTIN = {"offline": "cosyvoice.engine.offline:FACTORY"}


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


def engine_factory(settings: Settings) -> EngineFactory:
    """The factory of ``settings.engine``; ValueError naming the choices if unknown."""
    engines = available(settings)
    if settings.engine not in engines:
        raise ValueError(f"unknown engine {settings.engine!r}; available: "
                         f"{', '.join(engines)}")
    return _load(engines[settings.engine])
