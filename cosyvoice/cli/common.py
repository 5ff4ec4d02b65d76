"""What the CLI's commands share: exit codes, output formats, the two error kinds, the
settings and Synthesizer of a command line, writing outputs, and the progress bar."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

from cosyvoice.settings import Settings

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
FORMATS = ("wav", "flac", "mp3", "opus", "pcm16")  # cosyvoice.audio.encode.FORMATS
SUFFIX_FORMATS = {".wav": "wav", ".flac": "flac", ".mp3": "mp3", ".opus": "opus",
                  ".ogg": "opus", ".pcm": "pcm16", ".raw": "pcm16"}
BAR = 30


class UsageError(Exception):
    """A command line that cannot be run as given (exit code 2)."""


class ServerError(Exception):
    """The app answered with an error (its message) or could not be reached."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def settings_for(ns: argparse.Namespace) -> Settings:
    """``COSYVOICE_*`` settings with this command line's overrides."""
    settings = Settings.from_env()
    changes: dict[str, Any] = {}
    if getattr(ns, "engine", None):
        changes["engine"] = ns.engine
    if getattr(ns, "model_dir", None):
        changes["model_dir"] = ns.model_dir
    if getattr(ns, "device", None):
        changes["device"] = ns.device
    if getattr(ns, "voices_dir", None):
        changes["voices_dir"] = ns.voices_dir.expanduser()
    if getattr(ns, "max_text_chars", None):
        changes["max_text_chars"] = ns.max_text_chars
    return dataclasses.replace(settings, **changes)


def build_synthesizer(settings: Settings):
    """The app's Synthesizer (same bootstrap, same models); models load lazily."""
    import torch

    from cosyvoice.bootstrap import build
    from cosyvoice.settings import resolve_device

    try:
        device = resolve_device(settings.device)
        services = build(settings, device)
    except ValueError as e:
        raise UsageError(str(e)) from e
    if settings.torch_threads > 0:
        torch.set_num_threads(settings.torch_threads)
    return services.synth


def voice_store(settings: Settings, caps):
    from cosyvoice.voice.store import VoiceStore

    return VoiceStore.for_settings(settings, reserved=tuple(caps.voices))


def render(synth: Any, req: Any) -> Any:
    """The app's own synthesis (sentences joined as the UI and API join them); one progress
    line per sentence on stderr when there is more than one."""
    t0 = time.perf_counter()

    def progress(fraction: float, message: str) -> None:
        if not (fraction >= 1.0 and message.endswith(" 1/1")):
            print(f"{message}  {time.perf_counter() - t0:6.1f} s", file=sys.stderr,
                  flush=True)

    return synth.synthesize(req, progress=progress)


def write_output(output: str, data: bytes) -> str:
    """Write ``data`` to ``output`` via a temporary name and a rename; '-' is stdout."""
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return "<stdout>"
    path = Path(output).expanduser()
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"-o {output} cannot be written: {e.strerror or e}") from e
    return str(path)



def bar(fraction: float) -> str:
    """``[#####.....]  50%``: a text progress bar."""
    n = int(round(max(0.0, min(1.0, fraction)) * BAR))
    return f"[{'#' * n}{'.' * (BAR - n)}] {100 * fraction:3.0f}%"
