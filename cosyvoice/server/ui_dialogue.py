"""The Dialogue tab: a script of several voices → one file, with a progress bar per line,
the per-line table (line, voice, instruction, seconds, notes), the joined audio and its
subtitles (SRT, WebVTT). The script syntax is :mod:`cosyvoice.longform.dialogue`'s."""

from __future__ import annotations

from contextlib import nullcontext

import gradio as gr

from cosyvoice.errors import CosyVoiceError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.longform.dialogue import (
    DEFAULT_GAP_S,
    DEFAULT_SPEAKER_GAP_S,
    parse_script,
    render_dialogue,
)
from cosyvoice.pipeline import Synthesizer
from cosyvoice.server.texts import t
from cosyvoice.server.ui_lang import Relabel, headers
from cosyvoice.subtitles import to_srt, to_vtt

COLUMNS = ["line", "voice", "instruction", "seconds", "notes"]
HEADERS = headers("col_line", "col_voice", "col_instruction", "col_seconds", "notes")
EXAMPLE = ("[af_heart] Hello! Did you hear the news?\n"
           "[am_adam|happy] I did, and I can't wait to tell everyone.\n"
           "[zf_xiaoxiao] 我也听说了。[pause:300ms] 真是太好了！")


def make_render_dialogue(synth: Synthesizer, gate: SynthesisGate | None = None):
    """The event handler: (script, engine, gaps) → (audio path, table rows, subtitle files,
    status); ``api_name="dialogue"``."""

    def dialogue(script: str, engine: str | None, gap_s: float, speaker_gap_s: float,
                 progress=gr.Progress()):
        settings = synth.settings
        try:
            lines = parse_script(script or "", settings.dialogue_max_lines,
                                 settings.dialogue_max_chars)
            progress(0.0, desc="checking the script")
            size = sum(len(line.text) for line in lines)
            with gate.slot(size) if gate is not None else nullcontext():
                result = render_dialogue(
                    synth, lines, engine=engine or None, gap_s=gap_s,
                    speaker_gap_s=speaker_gap_s,
                    progress=lambda i, n, what: progress(i / n, desc=what))
        except CosyVoiceError as e:
            raise gr.Error(str(e), print_exception=False) from None
        srt, vtt = result.path.with_suffix(".srt"), result.path.with_suffix(".vtt")
        srt.write_text(to_srt(result.cues), encoding="utf-8")
        vtt.write_text(to_vtt(result.cues), encoding="utf-8")
        rows = [[r[c] for c in COLUMNS] for r in result.rows]
        status = (f"{len(rows)} lines, {result.duration_s:.2f} s of audio in "
                  f"{result.elapsed_s:.1f} s → {result.path.name}")
        return str(result.path), rows, [str(srt), str(vtt)], status

    return dialogue


def build_dialogue_tab(synth: Synthesizer, gate: SynthesisGate | None = None,
                       relabel: Relabel | None = None) -> None:
    """Render the tab inside the caller's ``gr.Blocks`` (its texts registered with
    ``relabel`` for the language switch)."""
    L = relabel or Relabel()
    with L(gr.Tab(t("tab_dialogue"), id="dialogue", elem_id="dialogue-tab"),
           label="tab_dialogue"):
        L(gr.Markdown(t("dialogue_help")), value="dialogue_help")
        with gr.Row():
            with gr.Column(scale=3):
                script = L(gr.Textbox(EXAMPLE, lines=10, label=t("dialogue_script"),
                                      elem_id="dialogue-script",
                                      max_length=synth.settings.dialogue_max_chars),
                           label="dialogue_script")
                engines = [(e.capabilities.label, n) for n, e in synth.engines.items()]
                engine = L(gr.Radio(engines, value=synth.default_engine, label=t("engine"),
                                    visible=len(engines) > 1), label="engine")
                with gr.Row():
                    gap = L(gr.Slider(0.0, 5.0, DEFAULT_GAP_S, step=0.05,
                                      label=t("dialogue_gap")), label="dialogue_gap")
                    speaker_gap = L(gr.Slider(0.0, 5.0, DEFAULT_SPEAKER_GAP_S, step=0.05,
                                              label=t("dialogue_speaker_gap")),
                                    label="dialogue_speaker_gap")
                button = L(gr.Button(t("dialogue_render"), variant="primary",
                                     elem_id="dialogue-generate"), value="dialogue_render")
            with gr.Column(scale=2):
                audio = L(gr.Audio(label=t("dialogue_audio"), type="filepath",
                                   elem_id="dialogue-audio", interactive=False),
                          label="dialogue_audio")
                status = gr.Markdown(elem_id="dialogue-status")
                table = L(gr.Dataframe(headers=HEADERS("en"), interactive=False, wrap=True,
                                       label=t("dialogue_table"), elem_id="dialogue-table"),
                          label="dialogue_table", headers=HEADERS)
                subtitles = L(gr.File(label=t("subtitle_files_both"), file_count="multiple",
                                      interactive=False, elem_id="dialogue-subtitles"),
                              label="subtitle_files_both")
        button.click(make_render_dialogue(synth, gate),
                     [script, engine, gap, speaker_gap], [audio, table, subtitles, status],
                     api_name="dialogue")
