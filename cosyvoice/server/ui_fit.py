"""Fitting a voice from the Synthesis tab: beside *Save voice* a choice between *Instant*
(the prompt's measured voice, saved at once) and *Fitted* (a background fit job, about its
budget in minutes), a progress line polled every second while the fit runs, and, when it is
done, the new voice in the voice list with its before/after samples and scores.

Exposed to scripts as ``api_name="fit_voice"`` (name, prompt → status, job id); the job's
progress is also at ``GET /api/v1/jobs/{id}``. Built from
:class:`cosyvoice.server.ui._SynthesisTab`'s components; ui.py only calls
:meth:`FitControls.wire`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import gradio as gr

from cosyvoice.errors import CosyVoiceError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.longform.fit_job import AFTER, BEFORE, ENGINE, check_fit_request
from cosyvoice.longform.jobs import DONE, UNFINISHED
from cosyvoice.longform.runner import JobRunner
from cosyvoice.server.ui_status import user_error

POLL_S = 1.0
INSTANT, FITTED = "instant", "fitted"
TEXTS = {
    "kind": ("How to save it", "保存方式"),
    "instant": ("Instant (~1 s)", "即时（约 1 秒）"),
    "fitted": ("Fitted (~{minutes} min)", "拟合（约 {minutes} 分钟）"),
    "info": ("Fitted: matched to the prompt's pitch and tuned on its timbre in the "
             "background; an independent judge finds it as close to the speaker as the "
             "instant blend (docs/kokoro.md).",
             "拟合：在后台匹配提示音频的音高并调整音色；独立评测认为它与即时混合音色"
             "同样接近说话人（见 docs/kokoro.md）。"),
    "queued": ("Fitting **{name}** in the background (job `{id}`): the voice joins the voice "
               "list when it is done.", "正在后台拟合 **{name}**（任务 `{id}`），完成后将出现"
               "在音色列表中。"),
    "needs_prompt": ("Fitting needs a prompt recording: upload or record 3–30 s of one "
                     "speaker.", "拟合需要参考音频：请上传或录制 3–30 秒单人语音。"),
    "cancel": ("Cancel the fit", "取消拟合"),
    "samples": ("Fitted voice: before (the instant blend) and after",
                "拟合音色：拟合前（即时混合）与拟合后"),
    "before": ("Before: the instant blend", "拟合前：即时混合"),
    "after": ("After: the fitted voice", "拟合后：拟合音色"),
}


def text(key: str, lang: str | None) -> str:
    return TEXTS[key][1 if lang == "zh" else 0]


def kind_choices(settings: Any, lang: str = "en") -> list[tuple[str, str]]:
    """Instant, and Fitted with its expected time (a fit runs about its budget)."""
    minutes = max(1, math.ceil(settings.fit_budget_s / 60))
    return [(text("instant", lang), INSTANT),
            (text("fitted", lang).format(minutes=minutes), FITTED)]


def fit_progress_text(summary: dict) -> str:
    """One line: the stage, generation, elapsed and ETA, the best GE2E and F0 so far."""
    fit = summary.get("fit") or {}
    p = fit.get("progress") or {}
    best, start = p.get("best") or {}, p.get("start") or {}
    line = (f"voice fit {fit.get('name', '?')!r}, {p.get('stage', '')}: generation "
            f"{p.get('generation', 0)}, {p.get('elapsed_s', 0):.0f} s")
    if summary["state"] in UNFINISHED:
        line += f", ETA {p.get('eta_s') or 0:.0f} s"
    if best.get("sim") is not None and start.get("sim") is not None:
        line += f" · GE2E {start['sim']:.3f} → {best['sim']:.3f}"
    if best.get("f0_st") is not None and start.get("f0_st") is not None:
        line += f" · F0 {start['f0_st']:+.1f} → {best['f0_st']:+.1f} st"
    if summary.get("error"):
        line += f" · {summary['error']}"
    return line


def fit_progress_html(summary: dict | None) -> str:
    if summary is None:
        return ""
    pct = 100.0 * summary["progress"]
    return (f"<progress id='fit-progress-bar' max='100' value='{pct:.1f}' "
            f"style='width:100%'></progress><div id='fit-progress-text' "
            f"data-state='{summary['state']}'>{summary['state']} — "
            f"{html.escape(fit_progress_text(summary))}</div>")


class FitControls:
    """The Instant/Fitted choice (built in the save row) and the fit's progress, samples
    and cancel button (built under the save status)."""

    def __init__(self, runner: JobRunner | None, settings: Any, visible: bool,
                 voice_choices: Callable[[Any, str], list]) -> None:
        self.runner = runner
        self.settings = settings
        self.voice_choices = voice_choices  # (Synthesizer view, lang) → the voice list
        self.kind = gr.Radio(kind_choices(settings), value=INSTANT, label=text("kind", "en"),
                             info=text("info", "en"), visible=visible and runner is not None,
                             scale=2, elem_id="save-kind")

    def outputs(self) -> None:
        self.job = gr.Textbox("", visible=False, elem_id="fit-job")
        self.progress = gr.HTML("", elem_id="fit-progress")
        self.cancel = gr.Button(text("cancel", "en"), size="sm", visible=False,
                                elem_id="fit-cancel")
        with gr.Accordion(text("samples", "en"), open=True, visible=False,
                          elem_id="fit-samples") as self.samples:
            with gr.Row():
                self.before = gr.Audio(label=text("before", "en"), type="filepath",
                                       interactive=False, elem_id="fit-before")
                self.after = gr.Audio(label=text("after", "en"), type="filepath",
                                      interactive=False, elem_id="fit-after")
        self.timer = gr.Timer(POLL_S, active=False)

    def wire(self, tab: Any, gate: SynthesisGate | None) -> None:
        """Events: the save button (a fit when Fitted is chosen), the timer's poll, cancel,
        the mode and engine (the choice is shown where a prompt can be fitted), the UI
        language."""
        if self.runner is None:
            return
        poll_out = [self.progress, tab.voice, self.timer, self.samples, self.before,
                    self.after, self.cancel]
        tab.save_btn.click(self.make_submit(gate),
                           [tab.save_name, tab.prompt, self.kind, tab.ui_lang, tab.engine],
                           [tab.save_status, self.job, self.timer, self.progress,
                            self.samples, self.cancel], api_name="fit_voice",
                           concurrency_id="synthesis")
        self.timer.tick(self.poll, [self.job, tab.ui_lang, tab.engine], poll_out,
                        api_name=False, queue=False, show_progress="hidden")
        self.cancel.click(self.cancel_job, [self.job, tab.ui_lang, tab.engine], poll_out,
                          api_name=False, queue=False)
        for event in (tab.mode.change, tab.engine.change):
            event(self.shown, [tab.mode, tab.engine], self.kind, api_name=False, queue=False)
        tab.ui_lang.change(lambda lang: (
            gr.update(label=text("kind", lang), info=text("info", lang),
                      choices=kind_choices(self.settings, lang)),
            gr.update(value=text("cancel", lang)), gr.update(label=text("samples", lang)),
            gr.update(label=text("before", lang)), gr.update(label=text("after", lang))),
            tab.ui_lang, [self.kind, self.cancel, self.samples, self.before, self.after],
            api_name=False, queue=False)

    def shown(self, mode: str, engine: str | None):
        try:
            caps = self.runner.synth.using(engine).capabilities
        except CosyVoiceError:
            return gr.update(visible=False)
        return gr.update(visible=caps.voice_fitting and mode in caps.prompt_modes)

    def make_submit(self, gate: SynthesisGate | None):
        """``(name, prompt, kind, lang, engine) → (status, job id, timer, progress, samples,
        cancel)``; nothing happens unless *Fitted* is chosen (the instant save runs then)."""
        runner = self.runner

        def fit_voice(name: str, prompt: str | None, kind: str = INSTANT, lang: str = "en",
                      engine: str | None = None):
            if kind != FITTED:
                return (gr.skip(),) * 6
            if not prompt:
                raise user_error(text("needs_prompt", lang), "fit_voice")
            view = runner.synth.using(ENGINE)
            try:
                check_fit_request(view, runner.store, name or "", None, "en")
                with gate.slot() if gate is not None else nullcontext():
                    validated = view.validate_prompt(Path(prompt))
                job = runner.submit_fit(name or "", validated)
            except CosyVoiceError as e:
                raise user_error(str(e), f"fit_voice ({type(e).__name__})") from None
            status = text("queued", lang).format(name=job["fit"]["name"], id=job["id"])
            status += "".join(f"\n\n⚠ {n}" for n in job["fit"].get("notes") or [])
            return (status, job["id"], gr.Timer(active=True), fit_progress_html(job),
                    gr.update(visible=False), gr.update(visible=True))

        return fit_voice

    def poll(self, job_id: str, lang: str, engine: str | None = None):
        """(progress, voice list, timer, samples box, before, after, cancel button)."""
        if not job_id:
            return ("", gr.skip(), gr.Timer(active=False), gr.skip(), gr.skip(), gr.skip(),
                    gr.update(visible=False))
        try:
            summary = self.runner.store.summary(job_id)
        except CosyVoiceError as e:
            return (html.escape(str(e)), gr.skip(), gr.Timer(active=False), gr.skip(),
                    gr.skip(), gr.skip(), gr.update(visible=False))
        bar = fit_progress_html(summary)
        if summary["state"] in UNFINISHED:
            return bar, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        voices = gr.update(choices=self.voice_choices(self.runner.synth.using(engine), lang))
        done = summary["state"] == DONE
        folder = self.runner.store.folder(job_id)
        return (bar, voices, gr.Timer(active=False), gr.update(visible=done),
                str(folder / BEFORE) if done else None, str(folder / AFTER) if done else None,
                gr.update(visible=False))

    def cancel_job(self, job_id: str, lang: str, engine: str | None = None):
        try:
            self.runner.store.cancel((job_id or "").strip())
        except CosyVoiceError as e:
            raise user_error(str(e), "fit_cancel") from None
        return self.poll(job_id, lang, engine)
