"""Subtitles under the output waveform: the SRT and WebVTT files of the latest result and
a small table of its sentence cues.

The Synthesizer writes ``<output>.srt`` / ``.vtt`` beside each saved WAV in ``outputs/``;
the output player's file (Gradio serves a copy with the same name) tells which.
"""

from __future__ import annotations

import re
from pathlib import Path

import gradio as gr

from cosyvoice.server.texts import t
from cosyvoice.server.ui_lang import Relabel, headers

HEADERS = headers("col_start", "col_end", "col_text")
_SRT_CUE = re.compile(r"\d+\n(\S+) --> (\S+)\n(.*?)(?:\n\n|\n?$)", re.DOTALL)


def cue_rows(srt: str) -> list[list[str]]:
    """SRT text → rows of (start, end, text) for the table."""
    return [[a.replace(",", "."), b.replace(",", "."), text.strip()]
            for a, b, text in _SRT_CUE.findall(srt)]


def subtitles_of(audio: str | None, outputs_dir: Path):
    """The subtitle files beside ``audio``'s saved output, and their cue rows."""
    if not audio:
        return None, []
    stem = Path(audio).stem
    files = [Path(outputs_dir) / f"{stem}{ext}" for ext in (".srt", ".vtt")]
    files = [f for f in files if f.is_file()]
    if not files:
        return None, []
    return [str(f) for f in files], cue_rows(files[0].read_text("utf-8"))


def attach_subtitles(output: gr.Audio, outputs_dir: Path,
                     relabel: Relabel | None = None) -> None:
    """Add the downloads and the cue table below ``output`` (inside the open layout)."""
    L = relabel or Relabel()
    with L(gr.Accordion(t("subtitles"), open=True, elem_id="subtitles"), label="subtitles"):
        files = L(gr.File(label=t("subtitle_files"), file_count="multiple", interactive=False,
                          elem_id="subtitle-files"), label="subtitle_files")
        table = L(gr.Dataframe(headers=HEADERS("en"), interactive=False, wrap=True,
                               elem_id="cue-table"), headers=HEADERS)
    output.change(lambda a: subtitles_of(a, outputs_dir), output, [files, table],
                  api_name=False, queue=False)
