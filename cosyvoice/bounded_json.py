"""JSON parsed within bounds: a nesting depth (a line nested 5,000 deep would otherwise end
in Python's RecursionError, a 500) and, when asked, unique keys in every object. One reader
for the JSON the app takes from outside a request body: batch job sources, and its own
state files read back from disk (:mod:`cosyvoice.state_files`).
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32  # deeper than any document the app reads or writes (a job.json is 4)


class JsonError(ValueError):
    """Not JSON, nested deeper than allowed, or (when asked) an object with a key twice."""


def nesting_depth(value: Any) -> int:
    """How deep lists and dicts nest in a parsed value (0 for a scalar, 1 for ``[1]``)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node \
            if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))
    return deepest


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, unique_keys: bool = False) -> Any:
    """``json.loads`` that refuses (:class:`JsonError`) anything nested more than
    ``max_depth`` levels and, with ``unique_keys``, an object that names a key twice.
    Bytes must be UTF-8. (CPython's parser stops a runaway nesting itself, with a
    RecursionError it raises cleanly; that too becomes a JsonError here.)"""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise JsonError(f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        value = json.loads(text, object_pairs_hook=_unique_object if unique_keys else None)
    except RecursionError:
        raise JsonError(f"nested too deeply; at most {max_depth} levels are allowed") \
            from None
    except JsonError:
        raise
    except ValueError as e:
        raise JsonError(str(e)) from None
    depth = nesting_depth(value)
    if depth > max_depth:
        raise JsonError(f"nested {depth} levels deep; at most {max_depth} are allowed")
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JsonError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out
