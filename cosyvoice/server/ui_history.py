"""The Synthesis tab's history of results (per browser session, in a gr.State): the list,
its table, the replay choices and the newest result's picture."""

from __future__ import annotations

from datetime import datetime

import gradio as gr
import soundfile as sf

from cosyvoice.pipeline import SynthesisRequest

HISTORY_MAX = 20  # results kept in a session's history list


def remember(history: list[dict] | None, path: str, req: SynthesisRequest,
             seconds: float) -> list[dict]:
    """This session's history with one more result, newest last, at most HISTORY_MAX."""
    history = list(history or [])
    n = (history[-1]["n"] + 1) if history else 1
    entry = {"n": n, "time": datetime.now().strftime("%H:%M:%S"), "path": path,
             "mode": req.mode, "text": req.text, "seconds": round(seconds, 2)}
    return [*history, entry][-HISTORY_MAX:]


def show_result(history: list[dict] | None):
    """The newest result's picture, the history table and the replay dropdown."""
    if not history:
        return gr.skip(), [], gr.update(choices=[])
    from cosyvoice.server.plots import result_picture

    newest = history[-1]
    wav, sr = sf.read(newest["path"], dtype="float32")
    return (result_picture(wav, sr), history_table(history),
            gr.update(choices=_history_choices(history), value=newest["path"]))


def history_table(history: list[dict] | None) -> list[list]:
    """Rows (newest first): number, time, mode, text (cut), seconds, file name."""
    history = history or []
    return _history_table(history)


def _history_table(history: list[dict]) -> list[list]:
    return [[h["n"], h["time"], h["mode"], h["text"][:60], h["seconds"],
             h["path"].rsplit("/", 1)[-1]] for h in reversed(history)]


def _history_choices(history: list[dict]) -> list[tuple[str, str]]:
    return [(f"{h['n']}. {h['time']} · {h['text'][:40]}", h["path"]) for h in reversed(history)]
