"""Voice fits as jobs of the batch-job machinery, in process with the real models and a
tiny search: a job ends as a saved voice of kind ``fitted`` with before/after samples and
scores; one stopped (a restart) resumes from its saved state and ends exactly where an
uninterrupted one does; cancel stops it; a damaged state or job file is set aside; the fit
runs niced and waits while the app is busy."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
import soundfile as sf

from cosyvoice.errors import ConflictError, TextError
from cosyvoice.longform.fit_job import (
    AFTER,
    BEFORE,
    RESULT_FILE,
    STATE_FILE,
    create_fit_job,
    run_fit_job,
)
from cosyvoice.longform.jobs import CANCELLED, DONE, FIT, QUEUED, RUNNING, JobStore
from cosyvoice.state_files import DAMAGED
from cosyvoice.voice.fit import FitConfig
from tests.conftest import local_services, require_kokoro

pytestmark = pytest.mark.slow
# one short text, a 4-number basis, 4 candidates: a few seconds per generation
TINY = dict(texts=("Hello there, my friend.",), n_toward=2, n_spread=0, popsize=4)


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    require_kokoro()
    return local_services(tmp_path_factory.mktemp("fitjob"), fit_niceness=5).synth


@pytest.fixture(scope="module")
def prompt(synth, real_female_prompt):
    return synth.validate_prompt(real_female_prompt)


def tiny_job(store: JobStore, synth, name: str, prompt, generations: int = 2) -> str:
    """A queued fit job whose search is :data:`TINY` for ``generations`` generations."""
    job = create_fit_job(store, synth, name, prompt, budget_s=600)
    spec = store.get(job["id"])["fit"]
    config = FitConfig(**{**TINY, "max_generations": generations, "lang": "en"})
    store.update(job["id"], fit={**spec, "config": config.to_dict()})
    return job["id"]


@pytest.fixture(scope="module")
def finished(synth, prompt, tmp_path_factory):
    """A TINY fit job run through, with what it reported and the niceness it reported from:
    the first test's subject and the uninterrupted run the second compares with."""
    store = JobStore(tmp_path_factory.mktemp("fit-jobs") / "jobs", 5)
    job_id = tiny_job(store, synth, "Job fit", prompt)
    with pytest.raises(ConflictError, match="queued or running already"):
        create_fit_job(store, synth, "JOB FIT", prompt)
    with pytest.raises(TextError, match="budget"):
        create_fit_job(store, synth, "Other", prompt, budget_s=1e9)
    seen, nice = [], []

    def report(summary):
        seen.append(summary)
        nice.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    base = os.getpriority(os.PRIO_PROCESS, 0)
    run_fit_job(store, job_id, synth, lambda: False, report=report)
    return store, job_id, seen, nice, base


def test_a_fit_job_ends_as_a_fitted_voice_with_samples_and_scores(synth, prompt, finished):
    store, job_id, seen, nice, base = finished
    done = store.summary(job_id)
    assert (done["state"], done["kind"], done["progress"], done["eta_s"]) == (DONE, FIT, 1.0, 0)
    gens = [s["fit"]["progress"].get("generation") for s in seen
            if s["fit"]["progress"]["stage"] == "fitting"]
    assert gens[-2:] == [1, 2] and seen[-1]["fit"]["progress"]["stage"] == "saving"
    first = next(s for s in seen if s["fit"]["progress"].get("generation") == 1)
    assert first["eta_s"] is not None and 0 < first["progress"] < 1
    assert max(nice) >= base + 5  # the generations were reported from the niced fit thread
    voice = synth.voices.get("Job fit")
    assert voice.kind == "fitted" and voice.pack().shape == (510, 256)
    assert done["fit"]["voice"] == "Job fit" and done["fit"]["result"]["generations"] == 2
    folder = store.folder(job_id)
    before, sr = sf.read(folder / BEFORE)
    after, _ = sf.read(folder / AFTER)
    assert sr == 24000 and len(before) > sr and len(after) > sr
    provenance = json.loads((folder / RESULT_FILE).read_text())
    assert provenance["prompt_sha256"] == voice.fit["prompt_sha256"]
    assert set(provenance["scores"]) == {"start", "final"} and provenance["budget_s"] == 600
    assert provenance["prompt_notes"] == list(prompt.notes)
    with pytest.raises(ConflictError, match="already saved"):
        create_fit_job(store, synth, "job fit", prompt)


def test_a_stopped_fit_resumes_from_its_state_and_ends_as_an_uninterrupted_one(
        synth, prompt, tmp_path, finished):
    store = JobStore(tmp_path / "jobs", 5)
    whole_store, whole, _, _, _ = finished
    assert whole_store.state(whole) == DONE

    stop = threading.Event()

    def report(summary):
        if summary["fit"]["progress"].get("generation") == 1:
            stop.set()  # as a drain does, here between generations

    part = tiny_job(store, synth, "Parted", prompt)
    run_fit_job(store, part, synth, stop.is_set, report=report)
    assert store.state(part) == RUNNING  # unfinished: a restart resumes it
    state_file = store.folder(part) / STATE_FILE
    first = json.loads(state_file.read_text())
    assert len(first["history"]) == 2 and first["cma"]["generation"] == 1

    again = JobStore(tmp_path / "jobs", 5)  # the app starts again on the same folder
    assert again.load() == [part] and again.state(part) == QUEUED
    run_fit_job(again, part, synth, lambda: False)
    resumed = again.summary(part)
    assert resumed["state"] == DONE and (resumed["runs"], resumed["resumed"]) == (2, 1)
    last = json.loads(state_file.read_text())
    assert last["history"][:2] == first["history"]  # generation 1 was not done again
    assert np.array_equal(synth.voices.get("Parted").pack(), synth.voices.get("Job fit").pack())
    theirs = json.loads((whole_store.folder(whole) / STATE_FILE).read_text())
    assert [h["score"] for h in last["history"]] == [h["score"] for h in theirs["history"]]


def test_cancel_stops_a_fit_before_its_next_generation(synth, prompt, tmp_path):
    store = JobStore(tmp_path / "jobs", 5)
    job_id = tiny_job(store, synth, "Cancelled", prompt, generations=5)

    def report(summary):
        if summary["fit"]["progress"].get("generation") == 1:
            store.cancel(job_id)

    run_fit_job(store, job_id, synth, lambda: False, report=report)
    summary = store.summary(job_id)
    assert summary["state"] == CANCELLED and summary["result"] is None
    assert summary["fit"]["progress"]["generation"] == 1
    assert synth.voices.find("Cancelled") is None


def test_damaged_state_and_job_files_are_set_aside(synth, prompt, tmp_path):
    store = JobStore(tmp_path / "jobs", 5)
    job_id = tiny_job(store, synth, "From scratch", prompt, generations=1)
    (store.folder(job_id) / STATE_FILE).write_text('{"cma": {"mean": [1]}, "history": []}')
    run_fit_job(store, job_id, synth, lambda: False)
    assert store.state(job_id) == DONE  # the damaged state was set aside, the fit ran anew
    assert any(DAMAGED in p.name for p in store.folder(job_id).iterdir())

    broken = tiny_job(store, synth, "Broken", prompt)
    job = json.loads((store.folder(broken) / "job.json").read_text())
    del job["fit"]["budget_s"]
    (store.folder(broken) / "job.json").write_text(json.dumps(job))
    again = JobStore(tmp_path / "jobs", 5)
    assert again.load() == []  # the other job loads; this one is set aside
    assert job_id in [j["id"] for j in again.list()]
    assert [q.name.split(DAMAGED)[0] for q in (tmp_path / "jobs" / broken).iterdir()
            if DAMAGED in q.name] == ["job.json"]


def test_the_fit_waits_while_the_app_is_busy(synth, prompt, tmp_path):
    store = JobStore(tmp_path / "jobs", 5)
    job_id = tiny_job(store, synth, "Patient", prompt, generations=1)
    calls = []

    def busy() -> bool:  # requests in flight for the first 25 questions
        calls.append(1)
        return len(calls) <= 25

    run_fit_job(store, job_id, synth, lambda: False, busy=busy)
    assert store.state(job_id) == DONE
    evaluations = store.summary(job_id)["fit"]["result"]["evaluations"]
    assert len(calls) >= 25 + evaluations  # asked before every evaluation, polled while busy
