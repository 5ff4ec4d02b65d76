"""The transcript helper of the Synthesis tab: when a prompt is uploaded or recorded in a
mode that shows the transcript box and the box is empty, the prompt is transcribed and the
box filled for the user to correct; a note says it was transcribed, by which recognizer and
in how long. A "Transcribe" button does the same on demand (replacing the box's text).

Exposed to scripts as ``api_name="transcribe"`` (prompt file, language → text, note).
Built from :class:`cosyvoice.server.ui._SynthesisTab`'s components; ui.py only calls
:meth:`TranscribeControls.wire`.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from typing import Any

import gradio as gr

from cosyvoice.asr.service import transcribe_file
from cosyvoice.errors import CosyVoiceError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.pipeline import Synthesizer

logger = logging.getLogger(__name__)

TEXTS = {
    "button": ("Transcribe the prompt", "识别提示音频文字"),
    "working": ("Transcribing the prompt…", "正在识别提示音频…"),
    "done": ("Transcribed by {recognizer} in {seconds:.1f} s (language: {language}); check "
             "the text and correct it if needed.",
             "已由 {recognizer} 自动识别，用时 {seconds:.1f} 秒（语言：{language}）；"
             "请核对并修改。"),
    "no_prompt": ("Upload or record a prompt first.", "请先上传或录制提示音频。"),
    "failed": ("Could not transcribe: {message}", "无法自动识别：{message}"),
}


def text(key: str, lang: str | None) -> str:
    return TEXTS[key][1 if lang == "zh" else 0]


class TranscribeControls:
    """The button and the note, created under the transcript box (``visible`` as it is)."""

    def __init__(self, visible: bool) -> None:
        with gr.Row(visible=visible, elem_id="transcribe-row") as self.row:
            self.button = gr.Button(text("button", "en"), size="sm", scale=1,
                                    elem_id="transcribe")
            self.note = gr.Markdown("", elem_id="transcribe-note")

    def wire(self, tab: Any, synth: Synthesizer, gate: SynthesisGate | None) -> None:
        """Events: prompt upload / recording (fill an empty box), the button (always),
        the mode (shown with the transcript box) and the UI language (labels)."""
        run = make_transcribe(synth, gate)
        ins = [tab.prompt, tab.prompt_text, tab.mode, tab.engine, tab.ui_lang]
        outs = [tab.prompt_text, self.note]
        for event in (tab.prompt.upload, tab.prompt.stop_recording):
            event(lambda *a: run(*a, only_if_empty=True), ins, outs, api_name=False,
                  concurrency_id="synthesis")
        self.button.click(lambda p, lang: run(p, "", "", None, lang, only_if_empty=False),
                          [tab.prompt, tab.ui_lang], outs, api_name="transcribe",
                          concurrency_id="synthesis")
        tab.mode.change(lambda m, e: gr.update(visible=shows_transcript(synth, m, e)),
                        [tab.mode, tab.engine], self.row, api_name=False, queue=False)
        tab.ui_lang.change(lambda lang: gr.update(value=text("button", lang)), tab.ui_lang,
                           self.button, api_name=False, queue=False)


def shows_transcript(synth: Synthesizer, mode: str | None, engine: str | None) -> bool:
    """The transcript box is shown in clone mode and where the engine needs it."""
    try:
        caps = synth.using(engine).capabilities
    except CosyVoiceError:
        return False
    return mode == "clone" or mode in caps.transcript_modes


def make_transcribe(synth: Synthesizer, gate: SynthesisGate | None):
    """``(prompt, box text, mode, engine, ui language) → (box update, note)``. With
    ``only_if_empty`` (an upload) nothing happens unless the mode shows the box and it is
    empty. A failure is shown in the note (the box is left as it was)."""

    def run(prompt: str | None, current: str, mode: str, engine: str | None, lang: str,
            only_if_empty: bool = False):
        if only_if_empty and ((current or "").strip() or not prompt
                              or not shows_transcript(synth, mode, engine)):
            return gr.update(), gr.update()
        if not prompt:
            return gr.update(), text("no_prompt", lang)
        try:
            with gate.slot() if gate is not None else nullcontext():
                out = transcribe_file(synth.manager, prompt, None, synth.limits)
        except CosyVoiceError as e:
            logger.info("transcription refused: %s", e)
            return gr.update(), text("failed", lang).format(message=e)
        return out.text, text("done", lang).format(recognizer=out.recognizer,
                                                   seconds=out.seconds, language=out.language)

    return run
