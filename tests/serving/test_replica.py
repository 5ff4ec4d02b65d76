"""A synthesis replica's work without Ray (cosyvoice/serving/replica.py is plain Python):
jobs carry the prompt, nothing stays on the node's disk, the health check follows the
readiness rule and the memory bound, and the ingress merges the replicas' metrics."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from cosyvoice.errors import PromptError
from cosyvoice.pipeline import SynthesisRequest
from cosyvoice.serving.ingress import ReplicaMetrics
from cosyvoice.serving.replica import REPLICA_HEADER, Job, SynthesisReplica

FAKE = ["--engine", "fake", "--engine-plugins", "fake=tests.fake_engine:FACTORY"]


def replica(tmp_path, *extra: str, max_rss_mb: float = 0.0) -> SynthesisReplica:
    args = [*FAKE, "--outputs-dir", str(tmp_path / "outputs"), "--cache-dir",
            str(tmp_path / "cache"), "--log-dir", str(tmp_path / "logs"), "--pidfile",
            str(tmp_path / "run" / "app.pid"), "--voices-dir", str(tmp_path / "voices"),
            *extra]
    return SynthesisReplica(args, max_rss_mb=max_rss_mb)


def test_a_job_carries_the_prompt_bytes_not_the_ingress_path(tmp_path):
    prompt = tmp_path / "upload" / "my voice.wav"
    prompt.parent.mkdir()
    prompt.write_bytes(b"RIFF-not-really")
    job = Job.of(SynthesisRequest(text="hi", mode="clone", prompt_path=str(prompt)), "wav")
    assert job.request["prompt_path"] is None and job.request["mode"] == "clone"
    assert job.prompt == b"RIFF-not-really" and job.prompt_name == "my voice.wav"
    assert Job.of(SynthesisRequest(text="hi"), "flac").prompt is None


def test_full_returns_the_audio_and_leaves_nothing_on_disk(tmp_path, real_female_prompt):
    rep = replica(tmp_path)
    answer = rep.full(Job(SynthesisRequest(text="One. Two three.").__dict__, "wav"))
    wav, sr = sf.read(io.BytesIO(answer.body), dtype="float32")
    assert sr == 16000 and len(wav) > 0.1 * sr
    assert answer.media_type == "audio/wav" and answer.headers[REPLICA_HEADER] == rep.name
    assert float(answer.headers["x-audio-duration"]) == pytest.approx(len(wav) / sr, abs=0.01)
    assert "x-output-file" not in answer.headers
    assert not list((tmp_path / "outputs").glob("*.wav"))
    job = Job.of(SynthesisRequest(text="Hello there.", mode="clone",
                                  prompt_path=str(real_female_prompt),
                                  prompt_text="a transcript"), "wav")
    clone = rep.full(job)
    assert np.abs(sf.read(io.BytesIO(clone.body))[0]).max() > 0.05
    assert not list((tmp_path / "cache" / "uploads").glob("prompt-*"))


def test_a_replica_error_is_the_typed_error(tmp_path):
    rep = replica(tmp_path)
    with pytest.raises(PromptError):
        rep.full(Job(SynthesisRequest(text="hi", mode="clone").__dict__, "wav"))


def test_health_check_follows_readiness_and_the_memory_bound(tmp_path):
    rep = replica(tmp_path)
    rep.check_health()  # ready, no bound
    assert rep.ready_report()["ready"] is True
    rep.max_rss_mb = 1.0
    with pytest.raises(RuntimeError, match="RSS"):
        rep.check_health()
    rep.max_rss_mb = 0.0
    rep.state.draining.set()
    with pytest.raises(RuntimeError, match="draining"):
        rep.check_health()


def test_reconfigure_reloads_only_on_a_new_reload_value(tmp_path, monkeypatch):
    rep = replica(tmp_path)
    calls = []
    monkeypatch.setattr(rep, "reload", lambda: calls.append(1) or {})
    rep.reconfigure({"reload": 0})  # the first config: the replica just started
    rep.reconfigure({"reload": 0})
    assert calls == []
    rep.reconfigure({"reload": 1})
    assert calls == [1]


def test_replica_metrics_are_merged_with_a_replica_label(tmp_path):
    rep = replica(tmp_path)
    rep.full(Job(SynthesisRequest(text="Count me.").__dict__, "wav"))
    name, text = rep.metrics_text()
    other = text.replace(name, "other")
    families = {f.name: f for f in ReplicaMetrics([(name, text), ("other", other)]).collect()}
    samples = [s for s in families["cosyvoice_requests"].samples
               if s.name == "cosyvoice_requests_total" and s.labels.get("outcome") == "ok"]
    assert {s.labels["replica"] for s in samples} == {name, "other"}
    assert all(s.value == 1 for s in samples)
