"""The CLI's parser and entry point: ``python -m cosyvoice COMMAND ...``."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from cosyvoice.cli.common import EXIT_ERROR, EXIT_USAGE, ServerError, UsageError
from cosyvoice.cli.dialogue import add_dialogue
from cosyvoice.cli.jobs import add_job
from cosyvoice.cli.speak import add_synthesize
from cosyvoice.cli.transcribe import add_transcribe
from cosyvoice.cli.voices import add_voices
from cosyvoice.settings import Settings

logger = logging.getLogger(__name__)


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
    add_synthesize(sub, common, caps)
    add_voices(sub, common)
    add_transcribe(sub, common)
    add_dialogue(sub, common)
    add_job(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        caps = engine_capabilities(argv)
    except UsageError as e:
        return _fail(str(e), EXIT_USAGE)
    ns = build_parser(caps).parse_args(argv)  # exits 2 with argparse's message on bad usage
    ns.verbose, ns.caps = getattr(ns, "verbose", False), caps
    logging.basicConfig(level=logging.INFO if ns.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
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
