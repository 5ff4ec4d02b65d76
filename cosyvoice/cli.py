"""Command line: speak text and manage saved voices in-process, without the server.

    python -m cosyvoice synthesize --text "Hello there." -o hello.wav
    echo "Read from stdin." | python -m cosyvoice synthesize -o out.flac
    python -m cosyvoice synthesize --file story.txt --prompt me.wav -o story.wav
    python -m cosyvoice voices list | add NAME PROMPT [--text T] | rm NAME | rename OLD NEW
    python -m cosyvoice transcribe me.wav [--language auto|en|zh] [--json]

Models are built exactly as the app builds them (:func:`cosyvoice.bootstrap.build`: the
engine's models and the shared ones in one ModelManager, a Synthesizer on top; ``--engine``
picks the engine, whose modes and voices the flags offer) and load on first use, so a preset
English sentence loads only the English voice and the vocoder. Settings come from the
``COSYVOICE_*`` environment variables (see ``python app.py --help``); the few flags below
override them. Exit codes: 0 done, 2 a usage or input error (the message says what to
fix), 1 anything else (a model that failed to load, an unexpected error).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cosyvoice.settings import Settings

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
FORMATS = ("wav", "flac", "mp3", "opus", "pcm16")  # cosyvoice.audio.encode.FORMATS
SUFFIX_FORMATS = {".wav": "wav", ".flac": "flac", ".mp3": "mp3", ".opus": "opus",
                  ".ogg": "opus", ".pcm": "pcm16", ".raw": "pcm16"}


class UsageError(Exception):
    """A command line that cannot be run as given (exit code 2)."""


# ---- parser ----------------------------------------------------------------------------
def engine_capabilities(argv: Sequence[str] | None):
    """The capabilities of the engine this command line names (``--engine``, else
    ``COSYVOICE_ENGINE``, else offline): cheap, no model loads. UsageError if unknown."""
    from cosyvoice.engine.registry import engine_factory

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--engine")
    pre.add_argument("--model-dir")
    known, _ = pre.parse_known_args(argv)
    settings = Settings.from_env()
    if known.engine:
        settings = dataclasses.replace(settings, engine=known.engine)
    if known.model_dir:
        settings = dataclasses.replace(settings, model_dir=known.model_dir)
    try:
        return engine_factory(settings).capabilities_for(settings)
    except ValueError as e:
        raise UsageError(str(e)) from e


def build_parser(caps) -> argparse.ArgumentParser:
    """The parser; ``--mode`` and ``--voice`` offer what the engine ``caps`` has."""
    # SUPPRESS: accepted before or after a sub-command without the inner parser's default
    # overwriting the outer value (argparse sub-parsers set their defaults last).
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--engine", help="the synthesis engine: offline, cosyvoice2, "
                        "cosyvoice3 or a plugin [env COSYVOICE_ENGINE, offline]")
    common.add_argument("--model-dir", help="a released CosyVoice2/3 folder (with --engine "
                        "cosyvoice2|cosyvoice3) [env COSYVOICE_MODEL_DIR]")
    common.add_argument("--device", help="auto | cpu | cuda | cuda:N [env COSYVOICE_DEVICE]")
    common.add_argument("--voices-dir", type=Path,
                        help="saved voices folder [env COSYVOICE_VOICES_DIR, models/voices]")
    common.add_argument("-v", "--verbose", action="store_true", help="log model loading")

    parser = argparse.ArgumentParser(
        prog="python -m cosyvoice",
        description="CosyVoice WebUI from the command line: synthesize speech and manage "
                    "saved voices in this process (no server needed).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_synthesize(sub, common, caps)
    _add_voices(sub, common)
    _add_transcribe(sub, common)
    from cosyvoice.cli_longform import add_dialogue, add_job

    add_dialogue(sub, common)
    add_job(sub, common)
    return parser


def _add_synthesize(sub: Any, common: argparse.ArgumentParser, caps) -> None:
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


def _add_voices(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("voices", parents=[common], help="list, add, rename or remove saved "
                       "voices", description="Saved voices: the measured voice of a prompt "
                       "recording kept under a name (shared with the app's voices folder).")
    vs = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    ls = vs.add_parser("list", parents=[common], help="bundled and saved voices")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=cmd_voices_list)
    add = vs.add_parser("add", parents=[common], help="save the voice of a prompt recording "
                        "or a voice blend",
                        description="Validate PROMPT as clone mode does (3–30 s of one "
                                    "person speaking), measure its voice and save it as NAME; "
                                    "or save a blend: --blend af_bella:2+af_sky:1.")
    add.add_argument("name", metavar="NAME", help="1–40 letters, digits, spaces, - _ .")
    add.add_argument("prompt", metavar="PROMPT", type=Path, nargs="?",
                     help="wav, flac, ogg or mp3")
    add.add_argument("--blend", metavar="SPEC", help="save a blend of the engine's voices "
                     "instead of a prompt, e.g. af_bella:2+af_sky:1")
    add.add_argument("--text", default="", help="what the prompt says (optional)")
    add.set_defaults(func=cmd_voices_add)
    rm = vs.add_parser("rm", parents=[common], help="delete a saved voice")
    rm.add_argument("name", metavar="NAME")
    rm.set_defaults(func=cmd_voices_rm)
    mv = vs.add_parser("rename", parents=[common], help="rename a saved voice")
    mv.add_argument("old", metavar="OLD")
    mv.add_argument("new", metavar="NEW")
    mv.set_defaults(func=cmd_voices_rename)


def _add_transcribe(sub: Any, common: argparse.ArgumentParser) -> None:
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


# ---- engine ----------------------------------------------------------------------------
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


# ---- synthesize ------------------------------------------------------------------------
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


# ---- voices ----------------------------------------------------------------------------
def cmd_voices_list(ns: argparse.Namespace) -> int:
    import json

    store = voice_store(settings_for(ns), ns.caps)
    presets = [{"name": k, "kind": "preset", "description": d}
               for k, d in ns.caps.voices.items()]
    saved = [v.summary() for v in store.list()] if ns.caps.saved_voices else []
    if ns.json:
        print(json.dumps({"voices": presets + saved, "voices_dir": str(store.root)},
                         ensure_ascii=False, indent=1))
        return EXIT_OK
    for p in presets:
        print(f"{p['name']:<24} preset  {p['description']}")
    for s in saved:
        if s["kind"] == "blend":
            print(f"{s['name']:<24} blend   {s['blend']}")
            continue
        f0 = f"F0 {s['f0_median_hz']:.0f} Hz" if s["f0_median_hz"] is not None else "F0 ?"
        seconds = s.get("prompt_seconds")
        length = f", prompt {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
        print(f"{s['name']:<24} saved   {f0}{length}")
    print(f"{len(saved)} saved voice{'s' if len(saved) != 1 else ''} in {store.root}",
          file=sys.stderr)
    return EXIT_OK


def cmd_voices_add(ns: argparse.Namespace) -> int:
    from cosyvoice.voice.store import save_from_blend, save_from_prompt

    if (ns.prompt is None) == (ns.blend is None):
        raise UsageError("give either a PROMPT recording or --blend SPEC "
                         "(e.g. af_bella:2+af_sky:1)")
    if ns.blend is not None:
        synth = build_synthesizer(settings_for(ns))  # loads no model
        voice = save_from_blend(synth.voices, synth, ns.name, ns.blend)
        print(f"saved voice blend {voice.name!r} ({voice.blend.spec}) in {voice.path}")
        return EXIT_OK
    if not ns.prompt.is_file():
        raise UsageError(f"{ns.prompt}: no such file; give a recording of 3–30 s of speech "
                         "(wav, flac, ogg, mp3)")
    synth = build_synthesizer(settings_for(ns))
    voice = save_from_prompt(synth.voices, synth, ns.name, ns.prompt, ns.text)
    s = voice.summary()
    print(f"saved voice {voice.name!r} (prompt {s['prompt_seconds']} s, F0 median "
          f"{s['f0_median_hz']} Hz) in {voice.path}")
    for note in s.get("notes") or []:
        print(f"note: {note}")
    return EXIT_OK


def cmd_voices_rm(ns: argparse.Namespace) -> int:
    store = voice_store(settings_for(ns), ns.caps)
    _refuse_builtin(store, ns.name, "deleted")
    print(f"deleted voice {store.delete(ns.name)!r}")
    return EXIT_OK


def cmd_voices_rename(ns: argparse.Namespace) -> int:
    store = voice_store(settings_for(ns), ns.caps)
    _refuse_builtin(store, ns.old, "renamed")
    voice = store.rename(ns.old, ns.new)
    print(f"renamed voice {ns.old!r} to {voice.name!r}")
    return EXIT_OK


def _refuse_builtin(store: Any, name: str, what: str) -> None:
    if name.strip().casefold() in {r.casefold() for r in store.reserved}:
        raise UsageError(f"{name!r} is a built-in voice; it cannot be {what}")


# ---- transcribe ------------------------------------------------------------------------
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


# ---- entry point -----------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    try:
        caps = engine_capabilities(argv)
    except UsageError as e:
        return _fail(str(e), EXIT_USAGE)
    ns = build_parser(caps).parse_args(argv)  # exits 2 with argparse's message on bad usage
    ns.verbose, ns.caps = getattr(ns, "verbose", False), caps
    logging.basicConfig(level=logging.INFO if ns.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    from cosyvoice.cli_longform import ServerError
    from cosyvoice.errors import CosyVoiceError

    try:
        return ns.func(ns)
    except UsageError as e:
        return _fail(str(e), EXIT_USAGE)
    except CosyVoiceError as e:  # typed core errors: 4xx = the input, 5xx = the engine
        return _fail(str(e), EXIT_USAGE if e.http_status < 500 else EXIT_ERROR)
    except ServerError as e:  # `job ...`: the app's own message
        return _fail(str(e), EXIT_USAGE if 400 <= e.status < 500 else EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:  # e.g. `voices list | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the exit-time flush cannot fail again
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - the edge: one line, the traceback with -v
        logger.debug("unexpected error", exc_info=True)
        if ns.verbose:
            logger.exception("unexpected error")
        return _fail(f"{type(e).__name__}: {e}", EXIT_ERROR)


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code
