"""Fitting a voice as a background job of kind ``fit`` on the batch-job machinery.

:func:`create_fit_job` checks the name, budget and language (the prompt was validated by
the caller, exactly as clone mode and saving a voice validate it), writes the prompt into
the job's folder and queues the job. The job runner (:mod:`.runner`) hands it to
:func:`run_fit_job`, which runs :func:`~cosyvoice.voice.fit.fit` and, after every
generation, writes the search state to ``fit_state.json`` (atomically) and the progress
and ETA into job.json. A job stopped by a restart (drain, SIGTERM, SIGKILL) resumes from
its last saved generation; a cancelled one stops too. Either stops within one text: the
generation in flight is dropped (:func:`~cosyvoice.voice.fit.fit`).

A fit never holds a synthesis slot. Its threads run at ``fit_niceness`` and, before each
text a candidate speaks and before its scoring, it waits (up to :data:`YIELD_MAX_S`) while
the app has requests admitted, so the app's requests come first. Its budget is wall time,
so that waiting counts.

When done: ``before.wav`` (a fixed sentence by the blend the fit started from) and
``after.wav`` (by the fitted pack), ``fit.json`` (the provenance with the scores), and a
saved voice of kind ``fitted`` (:meth:`~cosyvoice.voice.store.VoiceStore.save_fitted`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from cosyvoice.audio.io import read_audio, to_mono, write_wav_atomic
from cosyvoice.errors import ConflictError, CosyVoiceError, TextError
from cosyvoice.files import write_json_atomic
from cosyvoice.lifecycle.compute import call_niced
from cosyvoice.longform.jobs import CANCELLED, DONE, FAILED, FIT, JobStore
from cosyvoice.speaker.validation import PromptAudio
from cosyvoice.state_files import DamagedFile, read_json
from cosyvoice.voice.fit import G2P_LANG, FitConfig, FitResult, FitState, fit
from cosyvoice.voice.fit_cma import CmaEs
from cosyvoice.voice.store import check_name

logger = logging.getLogger(__name__)

ENGINE = "offline"  # the engine that fits voices and speaks them
LANGS = tuple(G2P_LANG)  # the languages a fit scores its candidates in
PROMPT_FILE = "prompt.wav"
STATE_FILE = "fit_state.json"
RESULT_FILE = "fit.json"
BEFORE, AFTER = "before.wav", "after.wav"
# The fixed sentence of the before/after samples (no fit text, no bench sentence).
SAMPLE_TEXT = {"en": "Here is a sentence this voice never heard before, read aloud.",
               "zh": "这是一句这个声音从没听过的话，请仔细听。"}
YIELD_MAX_S = 5.0  # the longest one step of a fit waits for the app's requests
YIELD_POLL_S = 0.05
MIN_BUDGET_S = 5.0
# Stop after this many generations without a better mean on the held-aside part of the
# prompt: longer fits lowered the independent judge (docs/kokoro.md, Fitted voices).
PATIENCE = 3


def check_budget(budget_s: float | None, settings: Any) -> float:
    """The budget in seconds: ``settings.fit_budget_s`` when None; TextError outside
    ``[MIN_BUDGET_S, settings.fit_max_budget_s]``."""
    budget = settings.fit_budget_s if budget_s is None else budget_s
    if not isinstance(budget, int | float) or isinstance(budget, bool) or not math.isfinite(
            budget) or not MIN_BUDGET_S <= budget <= settings.fit_max_budget_s:
        raise TextError(f"budget must be a number of seconds from {MIN_BUDGET_S:g} to "
                        f"{settings.fit_max_budget_s:g} (got {budget!r:.40})")
    return float(budget)


def check_fit_request(synth: Any, store: JobStore, name: object, budget_s: float | None,
                      lang: object) -> tuple[str, float, str]:
    """``(name, budget, lang)`` of a fit request, checked before its prompt is: TextError
    (422), ConflictError (409: the name is taken, by a saved voice or by a fit queued
    already), ModelError (503: this install cannot fit)."""
    if not synth.capabilities.voice_fitting:
        raise TextError(f"the {synth.capabilities.name} engine does not fit voices")
    name = check_name(name, synth.voices.reserved)
    if lang not in LANGS:
        raise TextError(f"lang must be one of {', '.join(LANGS)} (got {str(lang)[:20]!r})")
    budget = check_budget(budget_s, synth.settings)
    if synth.voices.find(name) is not None:
        raise ConflictError(f"a voice called {name!r} is already saved; pick another name "
                            "or delete that one first")
    if any(j["fit"]["name"].casefold() == name.casefold() for j in store.unfinished(FIT)):
        raise ConflictError(f"a fit of a voice called {name!r} is queued or running already")
    # last: loading the fit's models takes seconds where nothing is loaded yet (the CLI);
    # a ModelError now, not in the job, when this install cannot fit
    synth.engine.fit_tools()
    return name, budget, str(lang)


def create_fit_job(store: JobStore, synth: Any, name: str, prompt: PromptAudio,
                   budget_s: float | None = None, lang: str = "en") -> dict:
    """Queue a fit of ``prompt`` (validated by ``synth.validate_prompt``) saved as ``name``
    when done; returns the job's summary. The request is checked first
    (:func:`check_fit_request`); nothing is written when it fails."""
    name, budget, lang = check_fit_request(synth, store, name, budget_s, lang)
    settings = synth.settings
    config = FitConfig(lang=lang, popsize=settings.fit_popsize or None, patience=PATIENCE,
                       workers=max(1, settings.fit_workers))
    spec = {"name": name, "lang": lang, "budget_s": budget, "config": config.to_dict(),
            "prompt_s": round(len(prompt.wav) / prompt.sr, 3), "notes": list(prompt.notes),
            "progress": {"stage": "queued", "generation": 0, "fraction": 0.0,
                         "eta_s": round(budget, 1)}}
    summary = store.create(f"voice fit: {name}", [], {"engine": ENGINE}, kind=FIT, fit=spec,
                           prepare=lambda folder: write_wav_atomic(folder / PROMPT_FILE,
                                                                   prompt.wav, prompt.sr))
    logger.info("voice fit %s queued: %r, %.0f s budget", summary["id"], name, budget)
    return summary


def run_fit_job(store: JobStore, job_id: str, synth: Any, stopping: Callable[[], bool],
                busy: Callable[[], bool] | None = None,
                report: Callable[[dict], None] | None = None) -> None:
    """Run (or resume) the fit job ``job_id`` to a saved voice. Returns early, the job
    unfinished, when ``stopping()`` (a restart resumes it) or when it was cancelled.
    ``busy()``: whether the app has requests admitted (the fit waits before each
    evaluation while it does); ``report``: gets the job's summary after each generation."""
    if not store.start_run(job_id):
        return
    spec, folder = store.get(job_id)["fit"], store.folder(job_id)
    view = synth.using(ENGINE)
    work = _FitWork(store, job_id, spec, folder, report)

    def stop() -> bool:
        return stopping() or store.state(job_id) == CANCELLED

    def pause() -> None:
        until = time.monotonic() + YIELD_MAX_S
        while busy is not None and busy() and time.monotonic() < until and not stop():
            time.sleep(YIELD_POLL_S)

    try:
        tools = view.engine.fit_tools()
        wav, sr = _read_prompt(folder / PROMPT_FILE)
        resume = read_json(folder / STATE_FILE, "a voice fit's state", _check_state)
        work.stage("fitting" if resume is None else "resuming")
        result = call_niced(lambda: fit(
            wav, sr, tools, FitConfig.from_dict(spec["config"]), spec["budget_s"],
            work.progress, resume, stop, work.checkpoint, pause),
            synth.settings.fit_niceness, "voice-fit")
        if result.stopped == "requested":
            logger.info("voice fit %s stopped at generation %d (%s)", job_id,
                        result.provenance["generations"],
                        "cancelled" if store.state(job_id) == CANCELLED else "to resume")
            return
        if store.state(job_id) == CANCELLED:
            return
        work.stage("saving")
        call_niced(lambda: work.samples(tools, result), synth.settings.fit_niceness,
                   "voice-fit")
        provenance = {**result.provenance, "budget_s": spec["budget_s"],
                      "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "prompt_notes": spec.get("notes", [])}
        write_json_atomic(folder / RESULT_FILE, provenance)
        voice = view.voices.save_fitted(spec["name"], result.pack, provenance)
    except CosyVoiceError as e:  # an unusable prompt, the name taken meanwhile, no Kokoro
        logger.info("voice fit %s failed: %s", job_id, e)
        store.update(job_id, state=FAILED, error=str(e))
        return
    work.spec["progress"] = {**work.spec["progress"], "stage": "done", "fraction": 1.0,
                             "eta_s": 0.0}
    store.update(job_id, state=DONE, fit={**work.spec, "voice": voice.name,
                                          "result": voice.summary()["fit"]})
    logger.info("voice fit %s done: %r (%d generations, %.0f s)", job_id, voice.name,
                result.provenance["generations"], result.provenance["seconds"])


class _FitWork:
    """One run of a fit job: its progress in job.json, its state file, its samples."""

    def __init__(self, store: JobStore, job_id: str, spec: dict, folder: Path,
                 report: Callable[[dict], None] | None) -> None:
        self.store, self.job_id, self.spec, self.folder = store, job_id, dict(spec), folder
        self.report = report

    def stage(self, stage: str) -> None:
        self.spec["progress"] = {**self.spec.get("progress", {}), "stage": stage,
                                 "at": time.time()}
        self._write()

    def checkpoint(self, state: FitState) -> None:
        """After each generation: the state to resume from, written whole or not at all."""
        write_json_atomic(self.folder / STATE_FILE, state.to_dict(), indent=None)

    def progress(self, p) -> None:
        """After each generation: where the fit is, its ETA from the measured time per
        generation (it starts another only while one more fits the budget)."""
        per_gen = p.elapsed_s / max(p.generation, 1)
        left = max(0, math.floor((p.budget_s - p.elapsed_s) / per_gen)) if per_gen else 0
        eta = left * per_gen
        self.spec["progress"] = {
            "stage": "fitting", "generation": p.generation, "evaluations": p.evaluations,
            "elapsed_s": round(p.elapsed_s, 1), "per_generation_s": round(per_gen, 1),
            "eta_s": round(eta, 1), "fraction": round(p.elapsed_s / (p.elapsed_s + eta), 4),
            "start": _scores(p.start), "best": _scores(p.best), "at": time.time()}
        self._write()

    def _write(self) -> None:
        self.store.update(self.job_id, fit=self.spec)
        if self.report is not None:
            self.report(self.store.summary(self.job_id))

    def samples(self, tools: Any, result: FitResult) -> None:
        """``before.wav`` (the start blend) and ``after.wav`` (the fit) reading
        :data:`SAMPLE_TEXT`."""
        lang = result.provenance["lang"]
        phonemes = tools.kokoro.g2p(SAMPLE_TEXT[lang], G2P_LANG[lang])
        start = tools.kokoro.pack(result.provenance["start_blend"])
        for name, pack in ((BEFORE, start), (AFTER, result.pack)):
            wav = np.clip(tools.kokoro.infer_pack(phonemes, pack), -1.0, 1.0)
            write_wav_atomic(self.folder / name, wav, tools.kokoro.sample_rate)


def _scores(score) -> dict:
    return {"sim": round(score.sim, 4), "check": None if score.check is None
            else round(score.check, 4), "f0_st": None if score.f0_st is None
            else round(score.f0_st, 2)}


def _read_prompt(path: Path) -> tuple[np.ndarray, int]:
    if not path.is_file():
        raise TextError("the fit's prompt recording is missing from its job folder; start "
                        "the fit again")
    data, sr = read_audio(path)
    return to_mono(data).astype(np.float32), sr


def _check_state(data: Any) -> dict:
    """A fit_state.json read back: a :class:`FitState` whose search can go on (a damaged
    one is set aside and the fit starts again)."""
    if not isinstance(data, dict) or not isinstance(data.get("cma"), dict) \
            or not isinstance(data.get("history"), list):
        raise DamagedFile("not a fit state: cma or history missing or of the wrong type")
    FitState.from_dict(data)  # every field there (TypeError otherwise)
    CmaEs.from_state(data["cma"])  # KeyError / ValueError / TypeError when damaged
    return data
