"""``voices``: list, add (a prompt recording or a blend), fit, export, import, rename and
remove saved voices (in this process, on the voices folder the app shares)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cosyvoice.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    UsageError,
    bar,
    build_synthesizer,
    settings_for,
    voice_store,
    write_output,
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
    fit = vs.add_parser("fit", parents=[common], help="fit a voice to a prompt recording "
                        "(minutes; a progress bar)",
                        description="Validate PROMPT as clone mode does, then search Kokoro's "
                                    "style space for a voice that matches the speaker's pitch "
                                    "and timbre, and save it as NAME (kind: fitted). On 2 CPU "
                                    "cores a fit takes about its budget; an independent judge "
                                    "finds it as close to the speaker as the instant blend "
                                    "(docs/kokoro.md).")
    fit.add_argument("name", metavar="NAME", help="1–40 letters, digits, spaces, - _ .")
    fit.add_argument("prompt", metavar="PROMPT", type=Path, help="wav, flac, ogg or mp3")
    fit.add_argument("--budget", type=float, metavar="S",
                     help="wall-time budget in seconds [env COSYVOICE_FIT_BUDGET_S, 240]")
    fit.add_argument("--lang", choices=("en", "zh"), default="en",
                     help="the language the fit scores its candidates in [%(default)s]")
    fit.add_argument("--samples", type=Path, metavar="DIR",
                     help="keep before.wav (the blend) and after.wav (the fit) here")
    fit.set_defaults(func=cmd_voices_fit)
    ex = vs.add_parser("export", parents=[common], help="write a saved voice (any kind) to "
                       "one file")
    ex.add_argument("name", metavar="NAME")
    ex.add_argument("-o", "--output", required=True, metavar="FILE",
                    help="the voice file (NAME.cvvoice; '-' for stdout)")
    ex.set_defaults(func=cmd_voices_export)
    im = vs.add_parser("import", parents=[common], help="save the voice of a voice file")
    im.add_argument("file", metavar="FILE", type=Path, help="a file from `voices export`")
    im.add_argument("--name", help="save it under this name (default: the file's)")
    im.set_defaults(func=cmd_voices_import)
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
        if s["kind"] == "fitted":
            print(f"{s['name']:<24} fitted  {_fit_line(s['fit'])}")
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


def _fit_line(fit: dict) -> str:
    """``prompt F0 194 Hz, 12 generations, GE2E 0.52 → 0.55, F0 −3.0 → −1.1 st``."""
    scores = fit.get("scores", {})
    before, after = scores.get("before", {}), scores.get("after", {})

    def pair(key: str, fmt: str) -> str:
        a, b = before.get(key), after.get(key)
        return "?" if a is None or b is None else f"{a:{fmt}} → {b:{fmt}}"

    return (f"prompt F0 {fit.get('prompt_f0_hz', '?')} Hz, {fit.get('generations', '?')} "
            f"generations, GE2E {pair('sim', '.3f')}, F0 {pair('f0_st', '+.1f')} st")


def cmd_voices_fit(ns: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from cosyvoice.longform.fit_job import (
        AFTER,
        BEFORE,
        ENGINE,
        check_fit_request,
        create_fit_job,
        run_fit_job,
    )
    from cosyvoice.longform.jobs import JobStore

    if not ns.prompt.is_file():
        raise UsageError(f"{ns.prompt}: no such file; give a recording of 3–30 s of speech "
                         "(wav, flac, ogg, mp3)")
    synth = build_synthesizer(settings_for(ns)).using(ENGINE)
    with tempfile.TemporaryDirectory(prefix="voice-fit-") as tmp:
        store = JobStore(Path(tmp), 1)  # a private job: the app's jobs folder is the app's
        check_fit_request(synth, store, ns.name, ns.budget, ns.lang)
        prompt = synth.validate_prompt(ns.prompt)
        job = create_fit_job(store, synth, ns.name, prompt, ns.budget, ns.lang)
        print(f"fitting {ns.name!r} for up to {job['fit']['budget_s']:.0f} s …",
              file=sys.stderr)
        run_fit_job(store, job["id"], synth, lambda: False, report=_show_progress)
        final = store.summary(job["id"])
        if final["state"] == "done":
            _show_progress(final)  # the bar's last state: 100 %, done
        if ns.samples is not None and final["state"] == "done":
            ns.samples.mkdir(parents=True, exist_ok=True)
            for name in (BEFORE, AFTER):
                shutil.copyfile(store.folder(job["id"]) / name, ns.samples / name)
    print(file=sys.stderr)
    if final["state"] != "done":
        print(f"error: the fit {final['state']}: {final['error']}", file=sys.stderr)
        return EXIT_ERROR
    voice = synth.voices.get(ns.name)
    print(f"saved fitted voice {voice.name!r}: {_fit_line(voice.summary()['fit'])}")
    return EXIT_OK


def _show_progress(summary: dict) -> None:
    p = summary["fit"].get("progress", {})
    best = p.get("best") or {}
    score = f"  GE2E {best['sim']:.3f}" if best.get("sim") is not None else ""
    print(f"\r{bar(summary['progress'])} {p.get('stage', '')} generation "
          f"{p.get('generation', 0)}  {p.get('elapsed_s', 0):.0f} s, ETA "
          f"{p.get('eta_s') or 0:.0f} s{score}   ", end="", file=sys.stderr, flush=True)


def cmd_voices_export(ns: argparse.Namespace) -> int:
    from cosyvoice.voice.transfer import export_voice

    store = voice_store(settings_for(ns), ns.caps)
    _refuse_builtin(store, ns.name, "exported (it ships with every install)")
    voice = store.get(ns.name)
    where = write_output(ns.output, export_voice(voice))
    print(f"exported {voice.kind} voice {voice.name!r} to {where}", file=sys.stderr)
    return EXIT_OK


def cmd_voices_import(ns: argparse.Namespace) -> int:
    from cosyvoice.voice.transfer import MAX_FILE_BYTES, import_voice

    try:
        if ns.file.stat().st_size > MAX_FILE_BYTES:
            raise UsageError(f"{ns.file}: a voice file is at most {MAX_FILE_BYTES // 2**20} MB")
        data = ns.file.read_bytes()
    except OSError as e:
        raise UsageError(f"{ns.file}: {e.strerror or e}") from e
    store = voice_store(settings_for(ns), ns.caps)
    voice = import_voice(store, data, ns.name)
    print(f"imported {voice.kind} voice {voice.name!r} in {voice.path}")
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


