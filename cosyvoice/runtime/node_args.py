"""Arguments of a YAML node read as data, whatever form the reader gave it."""

from __future__ import annotations

from typing import Any


def kwargs_of(node: Any) -> dict[str, Any]:
    """The arguments of a YAML node read as data (an object with ``kwargs``), a dict, or {}."""
    if node is None:
        return {}
    if hasattr(node, "kwargs"):
        return dict(node.kwargs)
    if isinstance(node, dict):
        return dict(node)
    raise ValueError(f"expected a mapping of hyper-parameters, got {type(node).__name__}")
