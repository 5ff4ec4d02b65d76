"""``dialogue``: render a dialogue script of several voices into one file, in this process
(models built as the app builds them)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from cosyvoice.cli.common import (
    SUFFIX_FORMATS,
    UsageError,
    bar,
    build_synthesizer,
    settings_for,
    write_output,
)


def add_dialogue(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("dialogue", parents=[common], help="render a dialogue script of "
                       "several voices into one file",
                       description="Render a dialogue script ('[voice] text' or "
                       "'[voice|instruction] text' per line; see docs/creator.md) into one "
                       "audio file, with a progress line per line and the per-line table.")
    p.add_argument("file", type=Path, help="the script (UTF-8; '-': stdin)")
    p.add_argument("-o", "--output", required=True, help="the joined audio file")
    p.add_argument("--srt", type=Path, help="also write SubRip subtitles (one cue per line)")
    p.add_argument("--vtt", type=Path, help="also write WebVTT subtitles")
    p.add_argument("--gap", type=float, default=0.25, help="silence between lines (s)")
    p.add_argument("--speaker-gap", type=float, default=0.6,
                   help="silence where the speaker changes (s)")
    p.add_argument("--speed", type=float, default=1.0)
    p.add_argument("--seed", type=int)
    p.set_defaults(func=cmd_dialogue)


def cmd_dialogue(ns: argparse.Namespace) -> int:
    import dataclasses
    import shutil
    import tempfile

    from cosyvoice.audio.encode import encode
    from cosyvoice.longform.dialogue import parse_script, render_dialogue
    from cosyvoice.subtitles import to_srt, to_vtt

    try:
        script = sys.stdin.read() if str(ns.file) == "-" else ns.file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{ns.file}: cannot be read as UTF-8 text ({e})") from e
    settings = settings_for(ns)
    lines = parse_script(script, settings.dialogue_max_lines, settings.dialogue_max_chars)
    scratch = Path(tempfile.mkdtemp(prefix="cosyvoice-cli-"))
    t0 = time.perf_counter()
    try:
        synth = build_synthesizer(dataclasses.replace(settings, outputs_dir=scratch))

        def progress(i: int, n: int, what: str) -> None:
            print(f"{bar(i / n)} {what}  {time.perf_counter() - t0:6.1f} s", file=sys.stderr,
                  flush=True)

        result = render_dialogue(synth, lines, engine=ns.caps.name, gap_s=ns.gap,
                                 speaker_gap_s=ns.speaker_gap, speed=ns.speed, seed=ns.seed,
                                 progress=progress)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    fmt = SUFFIX_FORMATS.get(Path(ns.output).suffix.lower(), "wav")
    where = write_output(ns.output, encode(result.wav, result.sample_rate, fmt))
    for path, text in ((ns.srt, to_srt(result.cues)), (ns.vtt, to_vtt(result.cues))):
        if path is not None:
            write_output(str(path), text.encode("utf-8"))
    print(f"{'line':>5}  {'voice':<16} {'seconds':>8}  notes")
    for r in result.rows:
        print(f"{r['line']:>5}  {r['voice']:<16} {r['seconds']:>8.2f}  {r['notes']}")
    print(f"{where}  {result.duration_s:.2f} s audio, {len(result.rows)} lines, "
          f"{result.elapsed_s:.1f} s")
    return 0


