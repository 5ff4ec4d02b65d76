"""Process settings: one typed object, read from CLI flags and ``COSYVOICE_*`` env vars.

Precedence: CLI flag > environment variable > default. ``python app.py --help``
lists every setting with its env var and default.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class Settings:
    """Everything the process can be told. Field metadata holds the --help text."""

    host: str = field(default="0.0.0.0", metadata=_help("address to listen on"))
    port: int = field(default=7860, metadata=_help("port to listen on"))
    device: str = field(default="auto", metadata=_help("auto | cpu | cuda | cuda:N"))
    root_path: str = field(default="", metadata=_help("URL prefix behind a reverse proxy"))
    allowed_origins: str = field(default="", metadata=_help(
        "web origins (scheme://host[:port], comma-separated) whose pages may send POST, PUT, "
        "PATCH and DELETE requests besides the app's own page (a proxy that rewrites Host; "
        "an embedding site); empty = only the app's own"))
    engine: str = field(default="offline", metadata=_help(
        "the engine requests get when they name none: offline (the embedded default, always "
        "served), cosyvoice2 | cosyvoice3 (a released folder, --model-dir), or a plugin"))
    model_dir: str = field(default="", metadata=_help(
        "a released CosyVoice2/3 model folder, served as a second engine (its version is "
        "read from the YAML's name unless --engine says it); empty = none"))
    cosyvoice_dtype: str = field(default="auto", metadata=_help(
        "the CosyVoice engine's LLM and flow precision: auto (float32 on CPU, float16 on "
        "CUDA) | float32 | float16 | bfloat16; HiFT always runs float32"))
    engine_plugins: str = field(default="", metadata=_help(
        "extra engines, comma-separated NAME=module:factory (see docs/architecture.md)"))

    models_dir: Path = field(default=ROOT / "models", metadata=_help("converted and user weights"))
    outputs_dir: Path = field(default=ROOT / "outputs", metadata=_help("generated audio"))
    cache_dir: Path = field(default=ROOT / "cache", metadata=_help("temporary files, uploads"))
    log_dir: Path = field(default=ROOT / "logs", metadata=_help("log files"))
    pidfile: Path = field(default=ROOT / "run" / "app.pid", metadata=_help("pidfile path"))
    voices_dir: Path = field(default=ROOT / "models" / "voices", metadata=_help(
        "saved voices (one folder each: profile.json + prompt.wav)"))
    jobs_dir: Path = field(default=ROOT / "jobs", metadata=_help(
        "batch jobs (one folder each: job.json + item files); not under outputs/, which "
        "restart.sh clears, so that a job resumes after a restart"))
    lexicon_file: Path = field(default=ROOT / "models" / "lexicon.json", metadata=_help(
        "the user lexicon: word → reading per language (docs/pronunciation.md)"))

    max_text_chars: int = field(default=1000, metadata=_help("longest text accepted"))
    dialogue_max_lines: int = field(default=200, metadata=_help(
        "most lines in a dialogue script (each line: at most max_text_chars)"))
    dialogue_max_chars: int = field(default=20000, metadata=_help(
        "longest dialogue script, all lines together (characters)"))
    job_max_chars: int = field(default=500000, metadata=_help(
        "longest batch job, all items together (characters; the single-request limit "
        "max_text_chars applies to each item, long chapters are split to fit it)"))
    job_max_items: int = field(default=5000, metadata=_help("most items in one batch job"))
    job_max_queued: int = field(default=20, metadata=_help(
        "batch jobs waiting or running at once; more are refused (429)"))
    max_upload_mb: float = field(default=20.0, metadata=_help("largest prompt upload (MB)"))
    prompt_min_s: float = field(default=3.0, metadata=_help("shortest prompt after trimming (s)"))
    prompt_max_s: float = field(default=30.0, metadata=_help("longest prompt after trimming (s)"))
    prompt_min_sr: int = field(default=16000, metadata=_help("lowest prompt sample rate (Hz)"))
    asr_model: str = field(default="auto", metadata=_help(
        "prompt transcriber: auto (the multilingual whisper-base when installed, else the "
        "English-only whisper-tiny.en) | whisper-base | whisper-tiny.en"))
    embedding_cache_size: int = field(default=64, metadata=_help("speaker embeddings kept (LRU)"))
    profile_cache_size: int = field(default=64, metadata=_help("voice profiles kept (LRU)"))
    max_saved_voices: int = field(default=100, metadata=_help("most saved voices kept"))
    emotion_rules: str = field(default="", metadata=_help(
        "JSON file of emotion → prosody rules overriding the built-in table (cosyvoice/"
        "prosody/style.py); empty = built-in"))
    vocoder_precision: str = field(default="auto", metadata=_help(
        "CPU HiFi-GAN arithmetic: auto (int8 where the CPU has VNNI/AMX int8 instructions, "
        "else fp32) | int8 (resblocks of upsampling stages 2–3 in int8: 0.63 × the time "
        "with VNNI, 1.2 × without; DNSMOS unchanged, see docs/vocoder-cpu.md) | fp32 (exact); CUDA "
        "always runs fp32"))
    torch_threads: int = field(default=0, metadata=_help("torch intra-op threads (0 = all cores)"))
    kokoro_threads: int = field(default=1, metadata=_help(
        "Kokoro onnxruntime intra-op threads per synthesis (1: measured fastest on 2 cores, "
        "where two concurrent syntheses each take a core; see docs/kokoro.md)"))
    kokoro_path: str = field(default="auto", metadata=_help(
        "how Kokoro runs on CPU: auto (int8 where the CPU has VNNI/AMX int8 instructions, "
        "else onnx) | int8 / fp32 (the graph's generator in torch with int8 / float32 "
        "convs, the rest in onnxruntime) | onnx (the shipped graph whole in onnxruntime, "
        "the reference); CUDA always runs onnx. See docs/kokoro.md"))
    clone_space: bool = field(default=True, metadata=_help(
        "clone from Kokoro's voice space (a blend of the prompt's nearest Kokoro voices, "
        "then the adapter) when setup measured it; false: joe/baker + adapter only"))
    clone_adapter_scale: float = field(default=0.0, metadata=_help(
        "cloning v2: the adapter moves the Kokoro blend by strength × this (0: the blend "
        "as Kokoro speaks it, no adapter; on held-out clips of real speakers the adapter "
        "lowered similarity, bench/cloning_v2.py, docs/kokoro.md)"))
    fit_budget_s: float = field(default=240.0, metadata=_help(
        "a voice fit's wall-time budget when a request names none (s; docs/kokoro.md: what "
        "a longer fit buys)"))
    fit_max_budget_s: float = field(default=1800.0, metadata=_help(
        "the longest budget a voice fit may ask for (s)"))
    fit_popsize: int = field(default=6, metadata=_help(
        "candidates a voice fit tries per generation (6: as measured in docs/kokoro.md; 0: "
        "CMA-ES's default, 11 for its 14-number basis)"))
    fit_workers: int = field(default=2, metadata=_help(
        "candidates a voice fit speaks at once (one Kokoro thread each)"))
    fit_niceness: int = field(default=10, metadata=_help(
        "niceness of a voice fit's threads: the app's requests come first on a busy CPU"))
    malloc_arenas: int = field(default=2, metadata=_help(
        "glibc malloc arenas (0 = glibc default); few arenas keep RSS flat across threads"))

    concurrency: int = field(default=2, metadata=_help("syntheses running at once"))
    queue_size: int = field(default=8, metadata=_help("requests waiting before 'busy'"))
    preload: bool = field(default=True, metadata=_help("load models at start (else on first use)"))
    log_level: str = field(default="INFO", metadata=_help("DEBUG | INFO | WARNING | ERROR"))

    admin_token: str = field(default="", metadata=_help(
        "token for restart/reload/unload when listening beyond loopback "
        "(empty: one is generated into the pidfile's folder as admin_token)"))
    drain_timeout_s: float = field(default=30.0, metadata=_help(
        "on SIGTERM, how long in-flight syntheses may finish before exit (s)"))
    drain_linger_s: float = field(default=5.0, metadata=_help(
        "after a drain that finished syntheses, serve their result downloads until no "
        "request came for 1.5 s, at most this long (s)"))
    restart_cooldown_s: float = field(default=60.0, metadata=_help(
        "least time between two restarts from the UI or API (s)"))
    idle_unload_s: float = field(default=300.0, metadata=_help(
        "'unload idle models' unloads models unused for this long (s)"))
    slow_request_s: float = field(default=30.0, metadata=_help(
        "a synthesis slower than this counts toward the watchdog's slow streak (s)"))
    watchdog_interval_s: float = field(default=10.0, metadata=_help(
        "watchdog: seconds between polls"))
    watchdog_failures: int = field(default=3, metadata=_help(
        "watchdog: failed liveness polls in a row before a restart"))
    watchdog_gpu_fraction: float = field(default=0.9, metadata=_help(
        "watchdog: GPU memory fraction that, with slow responses, triggers a restart"))
    watchdog_slow_count: int = field(default=3, metadata=_help(
        "watchdog: consecutive slow syntheses that, with high GPU memory, trigger a restart"))
    watchdog_cooldown_s: float = field(default=300.0, metadata=_help(
        "watchdog: least time between two restarts it triggers (s)"))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Defaults overridden by ``COSYVOICE_<FIELD>`` environment variables."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = environ.get(env_name(f.name))
            if raw is not None:
                values[f.name] = _convert(f, raw)
        return cls(**values)

    @classmethod
    def from_args(cls, argv: Sequence[str] | None = None) -> Settings:
        """Parse CLI flags on top of the environment."""
        base = cls.from_env()
        parser = build_parser(base)
        ns = parser.parse_args(argv)
        changes = {f.name: _convert(f, getattr(ns, f.name)) for f in fields(cls)}
        return dataclasses.replace(base, **changes)

    def ensure_dirs(self) -> None:
        """Make the app's folders; a file in the place of one is set aside."""
        from cosyvoice.state_files import ensure_dir

        for path in (self.models_dir, self.outputs_dir, self.cache_dir, self.log_dir,
                     self.pidfile.parent):
            ensure_dir(path, "folder")

    def to_dict(self) -> dict[str, Any]:
        items = dataclasses.asdict(self).items()
        return {k: str(v) if isinstance(v, Path) else v for k, v in items}


def env_name(field_name: str) -> str:
    return "COSYVOICE_" + field_name.upper()


def _field_type(f: dataclasses.Field) -> type:
    return type(f.default)


def _convert(f: dataclasses.Field, raw: Any) -> Any:
    kind = _field_type(f)
    if isinstance(raw, kind) and kind is not str:
        return raw
    if kind is bool:
        return str(raw).strip().lower() in ("1", "true", "yes", "on")
    if issubclass(kind, Path):
        return Path(raw).expanduser()
    return kind(raw)


def build_parser(base: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="CosyVoice WebUI: offline voice-cloning TTS on one port.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    for f in fields(Settings):
        flag = "--" + f.name.replace("_", "-")
        default = getattr(base, f.name)
        text = f"{f.metadata.get('help', '')} [env {env_name(f.name)}]"
        if isinstance(default, bool):
            parser.add_argument(flag, dest=f.name, default=default,
                                action=argparse.BooleanOptionalAction, help=text)
        else:
            parser.add_argument(flag, dest=f.name, default=default, help=text,
                                type=str if isinstance(default, Path) else type(default))
    return parser


def resolve_device(name: str) -> str:
    """``auto`` → ``cuda`` when a GPU is usable, else ``cpu``; explicit names are checked."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {name} was asked for but no CUDA GPU is usable; "
                         "use --device cpu or auto")
    if name != "cpu" and not name.startswith("cuda"):
        raise ValueError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N")
    return name
