"""One way to build the per-component config dataclasses from a mapping (parsed JSON).

Each config's ``from_dict`` calls :func:`dataclass_from_dict`; their ``to_dict`` is
``dataclasses.asdict``, so ``cls.from_dict(c.to_dict()) == c``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def field_names(cls: type) -> set[str]:
    """The names a dataclass's ``__init__`` takes."""
    return {f.name for f in dataclasses.fields(cls) if f.init}


def dataclass_from_dict(cls: type[T], data: Mapping[str, Any], *,
                        convert: Callable[[Any], Any] | None = None,
                        unknown_error: type[Exception] | None = None,
                        what: str = "config") -> T:
    """Build the dataclass ``cls`` from ``data``.

    Keys that name a field become its arguments as they are, or through ``convert``; a
    field with no key takes its default, and one without a default raises the
    constructor's ``TypeError``. Keys that name no field are ignored (a config file may
    carry more than we read, e.g. a jik876 HiFi-GAN ``config.json``), unless
    ``unknown_error`` is given: then they raise it, naming them and the fields
    (``unknown {what} fields [...]; use [...]``), before any value is converted.
    """
    names = field_names(cls)
    if unknown_error is not None:
        extra = set(data) - names
        if extra:
            raise unknown_error(f"unknown {what} fields {sorted(extra)}; use {sorted(names)}")
    kwargs = {k: v for k, v in data.items() if k in names}
    if convert is not None:
        kwargs = {k: convert(v) for k, v in kwargs.items()}
    return cls(**kwargs)
