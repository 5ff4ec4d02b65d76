"""``synthesize``: speak text (``--text``, ``--file`` or stdin) into an audio file."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from cosyvoice.cli.common import (
    EXIT_OK,
    FORMATS,
    SUFFIX_FORMATS,
    UsageError,
    build_synthesizer,
    render,
    settings_for,
    write_output,
)


def add_synthesize(sub: Any, common: argparse.ArgumentParser, caps) -> None:
    p = sub.add_parser(
        "synthesize", parents=[common], help="speak text into an audio file",
        description="Speak text into an audio file. Text comes from --text, --file, or "
                    "standard input when neither is given. Progress per sentence goes to "
                    "stderr; the output path, duration and real-time factor are printed at "
                    "the end.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--text", help="the text to speak")
    src.add_argument("--file", type=Path, help="read the text from this UTF-8 file ('-': stdin)")
    p.add_argument("--mode", choices=caps.modes,
                   help=f"the {caps.name} engine's modes: {caps.mode_help()} (default: "
                   "instruct with --instruct, clone with --prompt, else the first)")
    saved = " or saved" if caps.saved_voices else ""
    p.add_argument("--voice", default=None,
                   help=f"a bundled ({', '.join(caps.voices)}){saved} voice name "
                   f"(default: {caps.default_voice})")
    p.add_argument("--prompt", type=Path, help="prompt recording to clone (3–30 s of speech)")
    p.add_argument("--prompt-text", default="", help="what the prompt says (optional)")
    p.add_argument("--instruct", default="",
                   help="natural-language style, e.g. 'speak happily' or '用四川话说'")
    p.add_argument("--speed", type=float, default=1.0, help="0.5–2.0 (default: 1.0)")
    p.add_argument("--seed", type=int, help="same seed, same audio (default: random)")
    p.add_argument("--strength", type=float, default=1.0,
                   help="cloning similarity, 0–1 (default: 1)")
    p.add_argument("--format", choices=FORMATS,
                   help="audio format (default: from the -o suffix, else wav)")
    p.add_argument("--max-text-chars", type=int,
                   help="longest text accepted [env COSYVOICE_MAX_TEXT_CHARS, 1000]")
    p.add_argument("-o", "--output", required=True,
                   help="output file ('-': write the audio to stdout)")
    p.add_argument("--srt", metavar="FILE", help="also write sentence subtitles as SubRip")
    p.add_argument("--vtt", metavar="FILE", help="also write sentence subtitles as WebVTT")
    p.set_defaults(func=cmd_synthesize)


def read_text(ns: argparse.Namespace) -> str:
    if ns.text is not None:
        return ns.text
    if ns.file is not None and str(ns.file) != "-":
        try:
            return ns.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(f"--file {ns.file}: no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--file {ns.file} cannot be read as UTF-8 text: {e}") from e
    if sys.stdin.isatty():
        print("reading the text from stdin; end it with Ctrl-D", file=sys.stderr)
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as e:
        raise UsageError(f"standard input is not UTF-8 text: {e}") from e


def output_format(ns: argparse.Namespace) -> str:
    if ns.format:
        return ns.format
    if ns.output == "-":
        return "wav"
    return SUFFIX_FORMATS.get(Path(ns.output).suffix.lower(), "wav")


def check_paths(ns: argparse.Namespace) -> None:
    """Cheap checks before any model loads."""
    if ns.prompt is not None and not ns.prompt.is_file():
        raise UsageError(f"--prompt {ns.prompt}: no such file; give a recording of 3–30 s "
                         "of speech (wav, flac, ogg, mp3)")
    if ns.output != "-":
        folder = Path(ns.output).expanduser().resolve().parent
        if not folder.is_dir():
            raise UsageError(f"-o {ns.output}: the folder {folder} does not exist")


def make_request(ns: argparse.Namespace, text: str):
    from cosyvoice.pipeline import SynthesisRequest

    mode = ns.mode or ("instruct" if ns.instruct else "clone" if ns.prompt else
                       ns.caps.modes[0])
    values: dict[str, Any] = dict(
        text=text, mode=mode, voice=ns.voice, prompt_path=str(ns.prompt) if ns.prompt else None,
        prompt_text=ns.prompt_text, speed=ns.speed, seed=ns.seed, strength=ns.strength,
        engine=ns.caps.name)  # the engine the flags were checked against: no fallback
    if ns.instruct:
        if "instruction" not in {f.name for f in dataclasses.fields(SynthesisRequest)}:
            raise UsageError("--instruct: this build cannot apply instructions yet")
        values["instruction"] = ns.instruct
    return SynthesisRequest(**values)


def cmd_synthesize(ns: argparse.Namespace) -> int:
    text = read_text(ns)
    fmt = output_format(ns)
    check_paths(ns)
    # The Synthesizer also saves each result as a WAV in outputs_dir: here a temporary one,
    # so the CLI leaves only the file it was asked for.
    scratch = Path(tempfile.mkdtemp(prefix="cosyvoice-cli-"))
    try:
        settings = dataclasses.replace(settings_for(ns), outputs_dir=scratch)
        synth = build_synthesizer(settings)
        result = render(synth, make_request(ns, text))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    from cosyvoice.audio.encode import encode

    where = write_output(ns.output, encode(result.wav, result.sample_rate, fmt))
    from cosyvoice.subtitles import to_srt, to_vtt

    for target, writer in ((ns.srt, to_srt), (ns.vtt, to_vtt)):
        if target:
            write_output(target, writer(result.cues).encode("utf-8"))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    # Models load on first use, inside the timed call: their load time (a fresh manager,
    # so every READY model loaded during this run) is reported apart from the RTF.
    loading = sum(m["load_seconds"] for m in synth.manager.states() if m["state"] == "READY")
    rtf = max(result.elapsed_s - loading, 0.0) / max(result.duration_s, 1e-6)
    n = result.sentences
    summary = (f"{where}  {result.duration_s:.2f} s audio ({fmt}, {result.sample_rate} Hz, "
               f"{n} sentence{'s' if n != 1 else ''})  RTF {rtf:.3f}  ({result.elapsed_s:.2f} "
               f"s, of which {loading:.2f} s loading models)")
    print(summary, file=sys.stderr if ns.output == "-" else sys.stdout)
    return EXIT_OK


