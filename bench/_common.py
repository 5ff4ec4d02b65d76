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


# the CPU features the vocoder and the runtimes' speed depend on (docs/vocoder-cpu.md)
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8",
             "amx_bf16")


def cpu_info() -> dict:
    """``{"model", "flags", "cores", "memory_gib"}``: the CPU's model name (with its family
    and model numbers: a VM may show only "AMD EPYC") and which of :data:`CPU_FLAGS` it has,
    from /proc/cpuinfo (the platform's name elsewhere)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for line in text.split("\n\n")[0].splitlines():  # the first processor's block
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    model = fields.get("model name") or platform.processor() or "cpu"
    if "cpu family" in fields:
        model += f" (family {fields['cpu family']} model {fields.get('model', '?')})"
    flags = set(fields.get("flags", "").split())
    return {"model": model, "flags": [f for f in CPU_FLAGS if f in flags],
            "cores": psutil.cpu_count(logical=True),
            "memory_gib": round(psutil.virtual_memory().total / 2**30)}


def machine() -> str:
    cpu = cpu_info()
    return (f"{platform.node()} · {cpu['model']} ({', '.join(cpu['flags']) or 'no AVX2'}) · "
            f"{cpu['cores']} cores · {cpu['memory_gib']} GiB")


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def make_synthesizer(device: str = "cpu", preload: bool = True, **settings_fields):
    """An in-process Synthesizer with every path it writes (outputs, voices, jobs, lexicon)
    in a temporary folder; ``settings_fields`` (``engine=``, ``model_dir=`` ...) go to its
    Settings. ``preload``: load every model and warm the engine now (else on first use)."""
    from cosyvoice.bootstrap import build
    from cosyvoice.settings import Settings

    tmp = Path(tempfile.mkdtemp(prefix="bench-"))
    settings = Settings(outputs_dir=tmp / "outputs", cache_dir=tmp / "cache",
                        log_dir=tmp / "logs", pidfile=tmp / "app.pid",
                        voices_dir=tmp / "voices", jobs_dir=tmp / "jobs",
                        lexicon_file=tmp / "lexicon.json", **settings_fields)
    settings.ensure_dirs()
    services = build(settings, device)
    if preload:
        services.manager.load_all()
        services.engine.warm()
    return services.synth
