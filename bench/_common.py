"""Shared helpers for benchmark scripts (not part of the app)."""

from __future__ import annotations

import importlib.util
import platform
import statistics
import tempfile
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
SENTENCE_20 = ("Every morning the small bakery on the corner fills the whole street with the "
               "warm smell of fresh bread and coffee.")


def package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {package} is not installed")
    return Path(spec.submodule_search_locations[0]).joinpath(*parts)


def real_prompt(name: str = "cate_blanch.mp3") -> Path:
    return package_file("gradio", "media_assets", "audio", name)


def machine() -> str:
    return (f"{platform.node()} · {psutil.cpu_count(logical=True)} cores · "
            f"{psutil.virtual_memory().total / 2**30:.0f} GiB · {platform.processor() or 'cpu'}")


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def make_synthesizer(device: str = "cpu", **settings_fields):
    """An in-process Synthesizer writing into a temporary outputs dir; ``settings_fields``
    (``engine=``, ``model_dir=`` ...) go to its Settings."""
    from cosyvoice.bootstrap import build
    from cosyvoice.settings import Settings

    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    settings = Settings(outputs_dir=tmp / "outputs", cache_dir=tmp / "cache",
                        log_dir=tmp / "logs", pidfile=tmp / "app.pid", **settings_fields)
    settings.ensure_dirs()
    services = build(settings, device)
    services.manager.load_all()
    services.engine.warm()
    return services.synth
