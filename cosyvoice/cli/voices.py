"""``voices``: list, add (a prompt recording or a blend), rename and remove saved voices."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cosyvoice.cli.common import (
    EXIT_OK,
    UsageError,
    build_synthesizer,
    settings_for,
    voice_store,
)


def add_voices(sub: Any, common: argparse.ArgumentParser) -> None:
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


