"""``transcribe``: what a prompt recording says, by the installed Whisper recognizer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cosyvoice.cli.common import EXIT_OK, UsageError, build_synthesizer, settings_for


def add_transcribe(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("transcribe", parents=[common], help="print what a prompt recording "
                       "says (its transcript for cloning)",
                       description="Transcribe a prompt recording (3–30 s of speech) with "
                       "the installed Whisper recognizer; the text goes to stdout, the "
                       "language and timing to stderr. A language the recognizer does not "
                       "know is refused (exit 2), never guessed.")
    p.add_argument("file", type=Path, help="the recording (wav, flac, ogg, mp3)")
    p.add_argument("--language", default="auto",
                   help="the prompt's language: auto (detect), en, zh, ... (default: auto)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.set_defaults(func=cmd_transcribe)


def cmd_transcribe(ns: argparse.Namespace) -> int:
    import json

    from cosyvoice.asr.service import transcribe_file

    if not ns.file.is_file():
        raise UsageError(f"{ns.file}: no such file; give a recording of 3–30 s of speech")
    synth = build_synthesizer(settings_for(ns))  # the app's manager: vad + asr, lazily
    out = transcribe_file(synth.manager, ns.file, ns.language, synth.limits)
    if ns.json:
        print(json.dumps(out.to_dict(), ensure_ascii=False))
        return EXIT_OK
    print(out.text)
    print(f"{out.language} ({out.recognizer}), {out.audio_s:.1f} s of speech transcribed in "
          f"{out.seconds:.2f} s", file=sys.stderr)
    return EXIT_OK


