"""The Gradio Blocks UI. Built from a Synthesizer; holds no models itself.

The synthesis event is exposed as ``api_name="generate"`` (returns the WAV path and a
status line) and the streaming one as ``api_name="generate_stream"`` (yields WAV chunks,
then the status), so scripts can call them with ``gradio_client`` (parameters documented
in docs/api.md; new parameters are appended with defaults so old calls keep working).
"""

from __future__ import annotations

import io
import logging
import random
import re
import shutil
import time
from contextlib import nullcontext

import gradio as gr
import numpy as np
import soundfile as sf

from cosyvoice.audio.io import write_wav_atomic
from cosyvoice.engine.base import INSTRUCTION_MAX_CHARS, SEED_MAX, SPEED_RANGE, Capabilities
from cosyvoice.errors import CosyVoiceError, TextError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.longform.runner import JobRunner
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from cosyvoice.server.admin import AdminActions
from cosyvoice.server.texts import bilingual, intro, t
from cosyvoice.server.ui_dialogue import build_dialogue_tab
from cosyvoice.server.ui_files import GuardedBlocks
from cosyvoice.server.ui_fit import FITTED, INSTANT, FitControls
from cosyvoice.server.ui_history import history_table, remember, show_result
from cosyvoice.server.ui_jobs import build_jobs_tab
from cosyvoice.server.ui_lang import Relabel, headers
from cosyvoice.server.ui_lexicon import build_lexicon_tab
from cosyvoice.server.ui_models import build_models_panel
from cosyvoice.server.ui_status import failed_status, user_error, working_status
from cosyvoice.server.ui_subtitles import attach_subtitles
from cosyvoice.server.ui_transcribe import TranscribeControls
from cosyvoice.voice.blend import is_blend_spec
from cosyvoice.voice.store import save_from_blend, save_from_prompt

logger = logging.getLogger(__name__)

MODE_KEYS = {"preset": "mode_preset", "clone": "mode_clone",
             "cross_lingual": "mode_xlingual", "instruct": "mode_instruct"}
STEP_KEYS = {"preset": "step_preset", "clone": "step_clone",
             "cross_lingual": "step_xlingual", "instruct": "step_instruct"}
HISTORY_HEADERS = headers("col_n", "col_time", "col_mode", "col_text", "col_seconds",
                          "col_file")


def _mode_choices(caps: Capabilities, lang: str) -> list[tuple[str, str]]:
    """The engine's modes, labelled (a mode this UI has no text for shows its name)."""
    return [(t(MODE_KEYS[m], lang) if m in MODE_KEYS else m, m) for m in caps.modes]


def _voice_choices(synth: Synthesizer, lang: str = "en") -> list[tuple[str, str]]:
    """The engine's voices, then the saved voices of this engine (read from the store on
    each call)."""
    saved = [(f"{v.name} · {t('fitted_label' if v.kind == 'fitted' else 'saved_label', lang)}",
              v.name) for v in synth.saved_voices()]
    return [(label, key) for key, label in synth.capabilities.voices.items()] + saved


def _parse_seed(seed) -> int | None:
    """The seed box's value: empty (or None) = a random seed; else a whole number in
    ``[0, SEED_MAX]`` (typed text, or a number from an API client)."""
    if seed is None or (isinstance(seed, str) and not seed.strip()):
        return None
    text = str(seed).strip()
    if isinstance(seed, float) and seed.is_integer():
        text = str(int(seed))
    if not re.fullmatch(r"\+?\d{1,10}", text) or int(text) > SEED_MAX:
        raise TextError(f"seed must be a whole number from 0 to {SEED_MAX}, or empty for a "
                        f"random one (got {text[:40]!r})")
    return int(text)


def _request(mode, text, voice, prompt_audio, prompt_text, speed, seed, strength,
             instruction, engine=None) -> SynthesisRequest:
    return SynthesisRequest(text=text or "", mode=mode or "preset", voice=voice or None,
                            prompt_path=prompt_audio, prompt_text=prompt_text or "",
                            speed=float(speed), seed=_parse_seed(seed),
                            strength=float(strength), instruction=instruction or "",
                            engine=engine or None)


def _status(audio_s: float, elapsed_s: float, sentences: int, name: str,
            notes: list[str]) -> str:
    status = t("done").format(audio=audio_s, elapsed=elapsed_s,
                              rtf=elapsed_s / max(audio_s, 1e-6), sentences=sentences,
                              name=name)
    return status + "".join(f"\n\n{n}" for n in notes)


def make_generate(synth: Synthesizer, gate: SynthesisGate | None = None):
    """The event handler: UI values → SynthesisRequest → (wav path, status, history).

    ``history`` is the session's gr.State (not part of the API's parameters or results)."""

    def generate(mode: str, text: str, voice: str, prompt_audio: str | None,
                 prompt_text: str, speed: float, seed, strength: float,
                 instruction: str | None = None, history: list[dict] | None = None,
                 engine: str | None = None, request: gr.Request = None,
                 progress=gr.Progress()):
        try:
            req = _request(mode, text, voice, prompt_audio, prompt_text, speed, seed,
                           strength, instruction, engine)
            progress(0.0, desc="checking input")
            with gate.slot(len(req.text)) if gate is not None else nullcontext():
                result = synth.synthesize(req, progress=lambda f, d: progress(f, desc=d))
        except CosyVoiceError as e:
            raise user_error(str(e), f"generate ({type(e).__name__})", request) from None
        status = _status(result.duration_s, result.elapsed_s, result.sentences,
                         result.path.name, result.notes)
        return (str(result.path), status,
                remember(history, str(result.path), req, result.duration_s))

    return generate


def wav_bytes(wav: np.ndarray, sr: int) -> bytes:
    """One streamed chunk: a complete 16-bit WAV file, as the saved output is written."""
    buf = io.BytesIO()
    sf.write(buf, np.clip(wav, -1.0, 1.0), sr, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def make_generate_stream(synth: Synthesizer, gate: SynthesisGate | None = None):
    """The streaming handler: yields (WAV chunk, status, history) per sentence — or per
    piece of one, where the engine streams on token hops (CosyVoice) — as soon as it is
    ready, then (None, final status, history + this result) once the whole output is
    saved. The chunks are the pipeline's cross-faded pieces, so together they are the
    saved file, sample for sample."""

    def generate_stream(mode: str, text: str, voice: str, prompt_audio: str | None,
                        prompt_text: str, speed: float, seed, strength: float,
                        instruction: str | None = None, history: list[dict] | None = None,
                        engine: str | None = None, request: gr.Request = None,
                        progress=gr.Progress()):
        if not streaming_available():
            raise user_error(bilingual("stream_no_ffmpeg"), "generate_stream", request)
        try:
            req = _request(mode, text, voice, prompt_audio, prompt_text, speed, seed,
                           strength, instruction, engine)
        except CosyVoiceError as e:
            raise user_error(str(e), "generate_stream", request) from None
        t0 = time.perf_counter()
        pieces: list[np.ndarray] = []
        notes: list[str] = []
        sr, sentences = synth.sample_rate, 0
        try:
            with gate.slot(len(req.text)) if gate is not None else nullcontext():
                for chunk in synth.stream(req):
                    sr = chunk.sample_rate  # the engine that answered (a fallback's rate)
                    sentences = chunk.total  # a chunk may be a piece of a sentence
                    pieces.append(chunk.wav)
                    notes.extend(chunk.notes)
                    progress((chunk.index + 1) / chunk.total,
                             desc=f"sentence {chunk.index + 1}/{chunk.total}")
                    yield (wav_bytes(chunk.wav, chunk.sample_rate),
                           t("streaming").format(i=chunk.index + 1, n=chunk.total), history)
        except CosyVoiceError as e:
            raise user_error(str(e), f"generate_stream ({type(e).__name__})",
                             request) from None
        wav = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        path = write_wav_atomic(synth.output_path(req), wav, sr)
        seconds = len(wav) / sr
        status = _status(seconds, time.perf_counter() - t0, sentences, path.name, notes)
        yield None, status, remember(history, str(path), req, seconds)

    return generate_stream


def make_save_voice(engines: Synthesizer):
    """Save the prompt's voice (as the chosen engine measures it) under a name; the voice
    list (with the new voice selected) is refreshed."""

    def save_voice(name: str, prompt_audio: str | None, prompt_text: str, voice: str | None,
                   mode: str, lang: str, engine: str | None = None, kind: str = INSTANT):
        if kind == FITTED:  # the fit's own event takes this click (ui_fit.py)
            return gr.skip(), gr.skip()
        try:
            synth = engines.using(engine)
        except CosyVoiceError as e:
            raise user_error(str(e), "save_voice") from None
        blend = (mode in synth.capabilities.voice_modes and not prompt_audio
                 and is_blend_spec(voice))
        if not prompt_audio and not blend:
            raise user_error(t("save_needs_prompt", lang), "save_voice")
        try:
            saved = (save_from_blend(synth.voices, synth, name or "", voice or "") if blend
                     else save_from_prompt(synth.voices, synth, name or "", prompt_audio,
                                           prompt_text or ""))
        except CosyVoiceError as e:
            raise user_error(str(e), f"save_voice ({type(e).__name__})") from None
        notes = saved.summary().get("notes") or []
        status = t("saved_voice", lang).format(name=saved.name)
        return (status + "".join(f"\n\n⚠ {n}" for n in notes),
                gr.update(choices=_voice_choices(synth, lang), value=saved.name))

    return save_voice


def dialect_markdown(lang: str = "en") -> str:
    """The dialect table (supported and not) from cosyvoice.prosody.dialects, if present."""
    try:
        from cosyvoice.prosody.dialects import DIALECTS
    except ImportError:
        return t("dialects_missing", lang)
    items = DIALECTS.values() if isinstance(DIALECTS, dict) else DIALECTS
    rows = [t("dialects_head", lang)]
    for d in items:
        name = d.name_zh if lang == "zh" else f"{d.name_en} ({d.name_zh})"
        mark = t("dialect_yes" if d.supported else "dialect_no", lang)
        reason = str(getattr(d, "reason", "") or "").replace("|", "/").replace("\n", " ")
        rows.append(f"| {name} | {mark} | {reason} |")
    return "\n".join(rows)


def _visibility(caps: Capabilities, m: str) -> dict[str, bool]:
    """Which optional inputs a mode of this engine shows: a voice where the mode speaks
    one; a prompt where it needs one (optional in instruct); its transcript in clone mode
    and where the engine needs it; the similarity strength with a prompt, where the
    engine's cloning uses it (``clone_strength``: a control that does nothing is hidden)."""
    prompt_mode = m in caps.prompt_modes
    optional_prompt = m == "instruct" and m in caps.voice_modes
    return {"voice": m in caps.voice_modes, "prompt": prompt_mode or optional_prompt,
            "prompt_text": m == "clone" or m in caps.transcript_modes,
            "strength": (prompt_mode or optional_prompt) and caps.clone_strength,
            "instruct": m == "instruct" and caps.instructions,
            "save": caps.saved_voices and (prompt_mode or bool(
                m in caps.voice_modes and caps.blend_voices))}


def _transcript_label(caps: Capabilities, m: str, lang: str = "en") -> str:
    """The transcript box's label: required where the engine needs it in this mode."""
    return t("prompt_text_required" if m in caps.transcript_modes else "prompt_text", lang)


def streaming_available() -> bool:
    """Gradio's streaming audio output encodes with ``ffmpeg``, and once ffmpeg is on PATH
    its other audio paths probe files with ``ffprobe``: both must be installed (Debian:
    ``apt-get install ffmpeg``)."""
    return shutil.which("ffmpeg") is not None and shutil.which("ffprobe") is not None


def build_ui(synth: Synthesizer, gate: SynthesisGate | None = None,
             admin: AdminActions | None = None, jobs: JobRunner | None = None) -> gr.Blocks:
    """The Synthesis and Dialogue tabs, the Batch tab when a job runner is given, and the
    Models tab when ``admin`` actions are given. Every tab registers its texts with one
    :class:`Relabel`, wired last to the interface language radio."""
    settings = synth.settings
    relabel = Relabel()
    # Events take only files uploaded to this app, and give back only the app's results.
    with GuardedBlocks(title="CosyVoice WebUI", delete_cache=(3600, 3600),
                       result_dirs=[settings.outputs_dir, settings.jobs_dir]) as demo:
        c = _SynthesisTab(synth, relabel, jobs)
        c.header()
        with relabel(gr.Tab(t("tab_synthesis"), id="synthesis", elem_id="synthesis-tab"),
                     label="tab_synthesis"):
            with gr.Row():
                with gr.Column(scale=3):
                    c.inputs(synth, settings.max_text_chars)
                with gr.Column(scale=2):
                    c.outputs()
                    attach_subtitles(c.output, settings.outputs_dir, relabel)
        c.wire(synth, gate)
        build_lexicon_tab(synth, relabel)
        c.transcribe.wire(c, synth, gate)
        demo.load(c.on_engine_voices, [c.ui_lang, c.engine], c.voice,
                  api_name=False, queue=False)  # saved voices, as of this page load
        build_dialogue_tab(synth, gate, relabel)
        if jobs is not None:
            build_jobs_tab(jobs, _voice_choices(synth), relabel)
        if admin is not None:
            build_models_panel(admin.manager, admin.state, settings, actions=admin,
                               lang=c.ui_lang, relabel=relabel)
        relabel.wire(c.ui_lang)
    demo.queue(max_size=settings.queue_size, default_concurrency_limit=settings.concurrency)
    _calm_queue(demo)
    return demo


# gradio 6 polls its queue every 1 ms and progress every 10 ms on Linux: an idle app spent
# 5.1 % of a core, 1.4 % with these (bench/app_rss.py --idle-s 30, 2 Zen 4 cores). A UI
# event may wait up to 20 ms longer to start; progress shows every 100 ms.
QUEUE_POLL_S = 0.02
PROGRESS_POLL_S = 0.1


def _calm_queue(demo: gr.Blocks) -> None:
    queue = demo._queue
    queue.sleep_when_free = max(queue.sleep_when_free, QUEUE_POLL_S)
    queue.progress_update_sleep_when_free = max(queue.progress_update_sleep_when_free,
                                                PROGRESS_POLL_S)


class _SynthesisTab:
    """The Synthesis tab's components (built in a Blocks context) and their events, as the
    engine's capabilities allow. Texts that depend only on the language are registered
    with ``relabel``; those that also depend on the mode or engine switch in :meth:`on_lang`."""

    def __init__(self, synth: Synthesizer, relabel: Relabel,
                 jobs: JobRunner | None = None) -> None:
        self.synth = synth
        self.jobs = jobs
        self.caps = synth.capabilities  # the default engine's, which the page opens with
        self.L = relabel

    def caps_of(self, engine: str | None) -> Capabilities:
        return self.synth.using(engine).capabilities

    def on_engine_voices(self, lang: str, engine: str | None):
        return gr.update(choices=_voice_choices(self.synth.using(engine), lang))

    def intro(self, lang: str = "en") -> str:
        """The introduction: every engine as its capabilities are now."""
        return intro([e.capabilities for e in self.synth.engines.values()], lang)

    def header(self) -> None:
        L = self.L
        self.title = L(gr.Markdown(t("title")), value="title")
        # read on each page load: a CosyVoice folder loaded since start shows its voices
        self.limits = L(gr.Markdown(self.intro, elem_id="intro"), value=self.intro)
        self.ui_lang = L(gr.Radio([("English", "en"), ("中文", "zh")], value="en",
                                  label=t("ui_lang"), elem_id="ui-lang"), label="ui_lang")

    def inputs(self, synth: Synthesizer, max_text_chars: int) -> None:
        L = self.L
        first = self.caps.modes[0]
        v = _visibility(self.caps, first)
        engines = [(e.capabilities.label, name) for name, e in synth.engines.items()]
        self.engine = L(gr.Radio(engines, value=synth.default_engine, label=t("engine"),
                                 visible=len(engines) > 1, elem_id="engine"), label="engine")
        self.mode = gr.Radio(_mode_choices(self.caps, "en"), value=first, label=t("mode"),
                             elem_id="mode")
        self.step = gr.Markdown(t(STEP_KEYS.get(first, "step_preset")), elem_id="step")
        self.text = L(gr.Textbox(label=t("text"), placeholder=t("text_ph"), lines=4,
                                 max_length=max_text_chars, elem_id="text"),
                      label="text", placeholder="text_ph")
        self.voice = gr.Dropdown(_voice_choices(synth), value=self.caps.default_voice,
                                 label=t("voice"), visible=v["voice"], elem_id="voice",
                                 allow_custom_value=bool(self.caps.blend_voices),
                                 info=t("voice_blend_info") if self.caps.blend_voices else None)
        self.instruction = L(gr.Textbox(label=t("instruction"), placeholder=t("instruction_ph"),
                                        max_length=INSTRUCTION_MAX_CHARS, visible=v["instruct"],
                                        elem_id="instruction"),
                             label="instruction", placeholder="instruction_ph")
        with L(gr.Accordion(t("dialects"), open=False, visible=v["instruct"],
                            elem_id="dialects"), label="dialects") as self.dialects:
            self.dialect_table = L(gr.Markdown(dialect_markdown("en")), value=dialect_markdown)
        self.prompt = L(gr.Audio(sources=["upload", "microphone"], type="filepath",
                                 label=t("prompt"), visible=v["prompt"], elem_id="prompt"),
                        label="prompt")
        self.prompt_text = L(gr.Textbox(label=_transcript_label(self.caps, first),
                                        placeholder=t("prompt_text_ph"),
                                        visible=v["prompt_text"], max_length=500,
                                        elem_id="prompt-text"), placeholder="prompt_text_ph")
        self.transcribe = TranscribeControls(v["prompt_text"])
        with gr.Row(visible=v["save"], elem_id="save-voice-row") as self.save_row:
            self.save_name = L(gr.Textbox(label=t("save_name"), placeholder=t("save_name_ph"),
                                          max_length=40, scale=3, elem_id="save-name"),
                               label="save_name", placeholder="save_name_ph")
            self.save_btn = L(gr.Button(t("save_btn"), size="sm", scale=1,
                                        elem_id="save-voice"), value="save_btn")
            self.fit = FitControls(self.jobs, synth.settings, self.caps.voice_fitting
                                   and first in self.caps.prompt_modes, _voice_choices)
        self.save_status = gr.Markdown("", elem_id="save-status")
        self.fit.outputs()
        with gr.Row():
            self.speed = L(gr.Slider(SPEED_RANGE[0], SPEED_RANGE[1], value=1.0, step=0.05,
                                     label=t("speed"), elem_id="speed"), label="speed")
            self.strength = L(gr.Slider(0.0, 1.0, value=1.0, step=0.05, label=t("strength"),
                                        visible=v["strength"], elem_id="strength"),
                              label="strength")
        with gr.Row():
            # A text box: Gradio's Number turns an empty value into 0 in the browser, so
            # every default generation would have used seed 0. Checked by _parse_seed.
            self.seed = L(gr.Textbox("", label=t("seed"), placeholder=t("seed_ph"),
                                     max_lines=1, max_length=12, elem_id="seed"),
                          label="seed", placeholder="seed_ph")
            self.dice = L(gr.Button(t("dice"), size="sm"), value="dice")
            can_stream = self.caps.streaming and streaming_available()
            self.stream = L(gr.Checkbox(False, label=t("stream"), elem_id="stream",
                                        interactive=can_stream, visible=self.caps.streaming,
                                        info=None if can_stream else t("stream_no_ffmpeg")),
                            label="stream", **({} if can_stream else {"info": "stream_no_ffmpeg"}))
        self.generate_btn = L(gr.Button(t("generate"), variant="primary", elem_id="generate"),
                              value="generate")
        self.stream_btn = L(gr.Button(t("generate"), variant="primary", visible=False,
                                      elem_id="generate-stream"), value="generate")

    def outputs(self) -> None:
        L = self.L
        self.output = L(gr.Audio(label=t("output"), type="filepath", interactive=False,
                                 elem_id="output"), label="output")
        self.stream_output = L(gr.Audio(label=t("stream_output"), streaming=True,
                                        autoplay=True, interactive=False, visible=False,
                                        elem_id="stream-output"), label="stream_output")
        self.status = L(gr.Markdown(t("ready"), label=t("status"), elem_id="status"),
                        label="status")
        self.picture = L(gr.Image(label=t("picture"), type="numpy", interactive=False,
                                  height=260, elem_id="picture"), label="picture")
        self.history = gr.State([])
        with L(gr.Accordion(t("history"), open=True, elem_id="history"),
               label="history") as self.history_box:
            self.history_table = L(gr.Dataframe(
                headers=HISTORY_HEADERS("en"), value=[], interactive=False,
                wrap=True, elem_id="history-table"), headers=HISTORY_HEADERS)
            self.history_pick = L(gr.Dropdown([], label=t("history_pick"),
                                              elem_id="history-pick"), label="history_pick")
            self.history_audio = L(gr.Audio(label=t("history_audio"), type="filepath",
                                            interactive=False, elem_id="history-audio"),
                                   label="history_audio")
            # Never shown: gives scripts this session's history as api_name="history".
            self.history_get = gr.Button(visible=False, elem_id="history-get")

    def wire(self, synth: Synthesizer, gate: SynthesisGate | None) -> None:
        args = [self.mode, self.text, self.voice, self.prompt, self.prompt_text, self.speed,
                self.seed, self.strength, self.instruction, self.history, self.engine]
        shown = [self.picture, self.history_table, self.history_pick]
        # Each click first shows "Generating…" (at once, outside the queue), so the status
        # always belongs to the latest click, and a failure replaces it with the reason.
        # always_last: a click while one runs is not dropped; it runs after it.
        quick: dict = {"api_name": False, "queue": False, "show_progress": "hidden"}
        for button, handler, out, name in (
                (self.generate_btn, make_generate(synth, gate), self.output, "generate"),
                (self.stream_btn, make_generate_stream(synth, gate), self.stream_output,
                 "generate_stream")):
            run = button.click(working_status, self.ui_lang, [self.status, out],
                               trigger_mode="always_last", **quick
                               ).then(handler, args, [out, self.status, self.history],
                                      api_name=name, concurrency_id="synthesis")
            run.success(show_result, self.history, shown, api_name=False)
            run.failure(failed_status, self.ui_lang, self.status, **quick)
        self.history_get.click(history_table, self.history, self.history_table,
                               api_name="history", queue=False)
        self.history_pick.change(lambda p: p or None, self.history_pick, self.history_audio,
                                 api_name=False, queue=False)
        self.save_btn.click(make_save_voice(synth),
                            [self.save_name, self.prompt, self.prompt_text, self.voice,
                             self.mode, self.ui_lang, self.engine, self.fit.kind],
                            [self.save_status, self.voice], api_name="save_voice",
                            concurrency_id="synthesis")
        self.fit.wire(self, gate)
        self.mode.change(self.on_mode, [self.mode, self.ui_lang, self.engine],
                         self._mode_targets(), api_name=False, queue=False)
        self.engine.change(self.on_engine, [self.engine, self.ui_lang],
                           [self.mode, self.voice, self.stream], api_name=False, queue=False)
        self.stream.change(lambda s: (gr.update(visible=not s), gr.update(visible=s),
                                      gr.update(visible=not s), gr.update(visible=s)),
                           self.stream, [self.generate_btn, self.stream_btn, self.output,
                                         self.stream_output], api_name=False, queue=False)
        self.dice.click(lambda: str(random.randint(0, SEED_MAX)), None, self.seed,
                        api_name=False, queue=False)
        self.ui_lang.change(self.on_lang, [self.ui_lang, self.mode, self.engine, self.status],
                            [self.mode, self.step, self.voice, self.prompt_text, self.status],
                            api_name=False, queue=False)
        self.voice.focus(self.on_engine_voices, [self.ui_lang, self.engine], self.voice,
                         api_name=False, queue=False)

    def on_engine(self, engine: str, lang: str):
        """Another engine: its modes (the mode's change event then shows its inputs), its
        voices and whether it streams."""
        caps = self.caps_of(engine)
        return (gr.update(choices=_mode_choices(caps, lang), value=caps.modes[0]),
                gr.update(choices=_voice_choices(self.synth.using(engine), lang),
                          value=caps.default_voice or None,
                          allow_custom_value=bool(caps.blend_voices)),
                gr.update(visible=caps.streaming))

    def _mode_targets(self) -> list:
        return [self.step, self.voice, self.prompt, self.prompt_text, self.strength,
                self.instruction, self.dialects, self.save_row]

    def on_mode(self, m: str, lang: str, engine: str | None = None):
        v = _visibility(self.caps_of(engine), m)
        return (gr.update(value=t(STEP_KEYS.get(m, "step_preset"), lang)),
                gr.update(visible=v["voice"]), gr.update(visible=v["prompt"]),
                gr.update(visible=v["prompt_text"],
                          label=_transcript_label(self.caps_of(engine), m, lang)),
                gr.update(visible=v["strength"]),
                gr.update(visible=v["instruct"]), gr.update(visible=v["instruct"]),
                gr.update(visible=v["save"]))

    def on_lang(self, lang: str, m: str, engine: str | None = None, status: str = ""):
        """The texts that also depend on the mode or the engine, and the status line while
        it says "Ready." (a result's status is left as it is)."""
        caps = self.caps_of(engine)
        ready = status in (t("ready", "en"), t("ready", "zh"))
        return (gr.update(label=t("mode", lang), choices=_mode_choices(caps, lang), value=m),
                gr.update(value=t(STEP_KEYS.get(m, "step_preset"), lang)),
                gr.update(label=t("voice", lang), info=t("voice_blend_info", lang)
                          if caps.blend_voices else None),
                gr.update(label=_transcript_label(caps, m, lang)),
                gr.update(value=t("ready", lang)) if ready else gr.skip())
