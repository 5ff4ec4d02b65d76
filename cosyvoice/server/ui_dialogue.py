"""The Dialogue tab: a script of several voices → one file, with a progress bar per line,
the per-line table (line, voice, instruction, seconds, notes), the joined audio and its
subtitles (SRT, WebVTT). The script syntax is :mod:`cosyvoice.longform.dialogue`'s."""

from __future__ import annotations

from contextlib import nullcontext

import gradio as gr

from cosyvoice.errors import CosyVoiceError
from cosyvoice.longform.dialogue import (
    DEFAULT_GAP_S,
    DEFAULT_SPEAKER_GAP_S,
    parse_script,
    render_dialogue,
)
from cosyvoice.pipeline import Synthesizer
from cosyvoice.server.gate import SynthesisGate
from cosyvoice.subtitles import to_srt, to_vtt

COLUMNS = ["line", "voice", "instruction", "seconds", "notes"]
EXAMPLE = ("[af_heart] Hello! Did you hear the news?\n"
           "[am_adam|happy] I did, and I can't wait to tell everyone.\n"
           "[zf_xiaoxiao] 我也听说了。[pause:300ms] 真是太好了！")
HELP = ("One line per dialogue line: `[voice] text` or `[voice|instruction] text`; a line "
        "without a tag continues the previous speaker; `#` starts a comment; inline "
        "`[pause:500ms]` and `[breath]` work inside a line. Voices: the engine's bundled and "
        "saved voices. / 每行一句：`[音色] 文本` 或 `[音色|指令] 文本`；"
        "无标签的行沿用上一位说话人；"
        "`#` 开头为注释；行内可用 `[pause:500ms]`、`[breath]`。")


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


def build_dialogue_tab(synth: Synthesizer, gate: SynthesisGate | None = None) -> None:
    """Render the tab inside the caller's ``gr.Blocks``."""
    with gr.Tab("Dialogue / 对话", id="dialogue", elem_id="dialogue-tab"):
        gr.Markdown(HELP)
        with gr.Row():
            with gr.Column(scale=3):
                script = gr.Textbox(EXAMPLE, lines=10, label="Dialogue script / 对话脚本",
                                    elem_id="dialogue-script",
                                    max_length=synth.settings.dialogue_max_chars)
                engines = [(e.capabilities.label, n) for n, e in synth.engines.items()]
                engine = gr.Radio(engines, value=synth.default_engine,
                                  label="Engine / 合成引擎", visible=len(engines) > 1)
                with gr.Row():
                    gap = gr.Slider(0.0, 5.0, DEFAULT_GAP_S, step=0.05,
                                    label="Gap between lines (s) / 行间停顿（秒）")
                    speaker_gap = gr.Slider(0.0, 5.0, DEFAULT_SPEAKER_GAP_S, step=0.05,
                                            label="Gap on a speaker change (s) / 换人停顿（秒）")
                button = gr.Button("Render dialogue / 生成对话", variant="primary",
                                   elem_id="dialogue-generate")
            with gr.Column(scale=2):
                audio = gr.Audio(label="Dialogue / 对话音频", type="filepath",
                                 elem_id="dialogue-audio", interactive=False)
                status = gr.Markdown(elem_id="dialogue-status")
                table = gr.Dataframe(headers=COLUMNS, interactive=False, wrap=True,
                                     label="Lines / 各行", elem_id="dialogue-table")
                subtitles = gr.File(label="Subtitles (SRT, WebVTT) / 字幕", file_count="multiple",
                                    interactive=False, elem_id="dialogue-subtitles")
        button.click(make_render_dialogue(synth, gate),
                     [script, engine, gap, speaker_gap], [audio, table, subtitles, status],
                     api_name="dialogue")
