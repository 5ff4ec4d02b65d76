"""The Gradio Blocks UI. Built from a Synthesizer; holds no models itself.

The synthesis event is exposed as ``api_name="generate"`` so scripts can call it with
``gradio_client`` (parameters documented in the README).
"""

from __future__ import annotations

import logging
import random
from contextlib import nullcontext

import gradio as gr

from cosyvoice.errors import CosyVoiceError
from cosyvoice.pipeline import (
    PRESET_VOICES,
    SEED_MAX,
    SPEED_RANGE,
    SynthesisRequest,
    Synthesizer,
)
from cosyvoice.server.admin import AdminActions, build_models_panel
from cosyvoice.server.gate import SynthesisGate
from cosyvoice.server.texts import t

logger = logging.getLogger(__name__)


def _mode_choices(lang: str) -> list[tuple[str, str]]:
    return [(t("mode_preset", lang), "preset"), (t("mode_clone", lang), "clone")]


def _voice_choices() -> list[tuple[str, str]]:
    return [(label, key) for key, (_, label) in PRESET_VOICES.items()]


def _parse_seed(seed) -> int | None:
    if seed is None or (isinstance(seed, str) and not seed.strip()):
        return None
    try:
        return int(float(seed))
    except (TypeError, ValueError) as e:
        raise gr.Error(f"seed must be a whole number from 0 to {SEED_MAX}, or empty") from e


def make_generate(synth: Synthesizer, gate: SynthesisGate | None = None):
    """The event handler: UI values → SynthesisRequest → (wav path, status)."""

    def generate(mode: str, text: str, voice: str, prompt_audio: str | None,
                 prompt_text: str, speed: float, seed, strength: float,
                 progress=gr.Progress()):
        req = SynthesisRequest(text=text or "", mode=mode or "preset", voice=voice or "joe",
                               prompt_path=prompt_audio, prompt_text=prompt_text or "",
                               speed=float(speed), seed=_parse_seed(seed),
                               strength=float(strength))
        try:
            progress(0.0, desc="checking input")
            with gate.slot() if gate is not None else nullcontext():
                result = synth.synthesize(req, progress=lambda f, d: progress(f, desc=d))
        except CosyVoiceError as e:
            raise gr.Error(str(e)) from None
        notes = "".join(f"\n\n{n}" for n in result.notes)
        status = t("done").format(audio=result.duration_s, elapsed=result.elapsed_s,
                                  rtf=result.rtf, sentences=result.sentences,
                                  name=result.path.name)
        return str(result.path), status + notes

    return generate


def build_ui(synth: Synthesizer, gate: SynthesisGate | None = None,
             admin: AdminActions | None = None) -> gr.Blocks:
    """The Synthesis tab, plus the Models tab when ``admin`` actions are given."""
    settings = synth.settings
    with gr.Blocks(title="CosyVoice WebUI", delete_cache=(3600, 3600)) as demo:
        title = gr.Markdown(t("title"))
        limits = gr.Markdown(t("limits"))
        ui_lang = gr.Radio([("English", "en"), ("中文", "zh")], value="en",
                           label=t("ui_lang"), elem_id="ui-lang")
        with gr.Tab(t("tab_synthesis"), id="synthesis", elem_id="synthesis-tab") as synth_tab:
            with gr.Row():
                with gr.Column(scale=3):
                    mode = gr.Radio(_mode_choices("en"), value="preset", label=t("mode"),
                                    elem_id="mode")
                    step = gr.Markdown(t("step_preset"), elem_id="step")
                    text = gr.Textbox(label=t("text"), placeholder=t("text_ph"), lines=4,
                                      max_length=settings.max_text_chars, elem_id="text")
                    voice = gr.Dropdown(_voice_choices(), value="joe", label=t("voice"),
                                        elem_id="voice")
                    prompt = gr.Audio(sources=["upload", "microphone"], type="filepath",
                                      label=t("prompt"), visible=False, elem_id="prompt")
                    prompt_text = gr.Textbox(label=t("prompt_text"),
                                             placeholder=t("prompt_text_ph"), visible=False,
                                             max_length=500, elem_id="prompt-text")
                    with gr.Row():
                        speed = gr.Slider(SPEED_RANGE[0], SPEED_RANGE[1], value=1.0, step=0.05,
                                          label=t("speed"), elem_id="speed")
                        strength = gr.Slider(0.0, 1.0, value=1.0, step=0.05, label=t("strength"),
                                             visible=False, elem_id="strength")
                    with gr.Row():
                        seed = gr.Number(value=None, label=t("seed"), precision=0, minimum=0,
                                         maximum=SEED_MAX, elem_id="seed")
                        dice = gr.Button(t("dice"), size="sm")
                    generate_btn = gr.Button(t("generate"), variant="primary", elem_id="generate")
                with gr.Column(scale=2):
                    output = gr.Audio(label=t("output"), type="filepath", interactive=False,
                                      elem_id="output")
                    status = gr.Markdown(t("ready"), label=t("status"), elem_id="status")

        def on_mode(m: str, lang: str):
            clone = m == "clone"
            return (gr.update(value=t("step_clone" if clone else "step_preset", lang)),
                    gr.update(visible=not clone), gr.update(visible=clone),
                    gr.update(visible=clone), gr.update(visible=clone))

        mode.change(on_mode, [mode, ui_lang], [step, voice, prompt, prompt_text, strength],
                    api_name=False, queue=False)
        dice.click(lambda: random.randint(0, SEED_MAX), None, seed, api_name=False,
                   queue=False)

        def on_lang(lang: str, m: str):
            step_key = "step_clone" if m == "clone" else "step_preset"
            return (gr.update(value=t("title", lang)), gr.update(value=t("limits", lang)),
                    gr.update(label=t("ui_lang", lang)),
                    gr.update(label=t("mode", lang), choices=_mode_choices(lang), value=m),
                    gr.update(value=t(step_key, lang)),
                    gr.update(label=t("text", lang), placeholder=t("text_ph", lang)),
                    gr.update(label=t("voice", lang)), gr.update(label=t("prompt", lang)),
                    gr.update(label=t("prompt_text", lang)), gr.update(label=t("speed", lang)),
                    gr.update(label=t("strength", lang)), gr.update(label=t("seed", lang)),
                    gr.update(value=t("dice", lang)), gr.update(value=t("generate", lang)),
                    gr.update(label=t("output", lang)))

        ui_lang.change(on_lang, [ui_lang, mode],
                       [title, limits, ui_lang, mode, step, text, voice, prompt, prompt_text,
                        speed, strength, seed, dice, generate_btn, output],
                       api_name=False, queue=False)
        generate_btn.click(make_generate(synth, gate),
                           [mode, text, voice, prompt, prompt_text, speed, seed, strength],
                           [output, status], api_name="generate",
                           concurrency_id="synthesis")
        ui_lang.change(lambda lg: gr.update(label=t("tab_synthesis", lg)), ui_lang, synth_tab,
                       api_name=False, queue=False)
        if admin is not None:
            build_models_panel(admin.manager, admin.state, settings, actions=admin, lang=ui_lang)
    demo.queue(max_size=settings.queue_size, default_concurrency_limit=settings.concurrency)
    return demo
