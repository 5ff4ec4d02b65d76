"""Where the bundled weights live: data files of installed registry packages.

The packages are located with :func:`importlib.util.find_spec` and never imported (some
of them import torchaudio or heavy frameworks at import time).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from cosyvoice.errors import ModelError

KOKORO_MANIFEST = Path(__file__).resolve().parent / "acoustic" / "kokoro_manifest.json"


def kokoro_manifest() -> dict:
    """The Kokoro files' sources and sha256 (``acoustic/kokoro_manifest.json``): what setup
    fetches and verifies, what the model's config and the voice space's key are read from."""
    return json.loads(KOKORO_MANIFEST.read_text("utf-8"))


def package_dir(package: str, hint: str) -> Path:
    """The folder of installed ``package``; :class:`ModelError` with ``hint`` if missing.

    ``hint`` tells the user what to run, e.g. "run `bash run.sh --setup-only`".
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the package {package} is not installed; {hint}")
    return Path(spec.submodule_search_locations[0])
