"""The fitter with the real Kokoro model and GE2E encoder, on tiny budgets: a 510×256
float32 pack with its provenance, deterministic under its seed, a resumed fit equal to an
uninterrupted one, progress after every generation, stopping on request, on its budget
and on no progress, and bad prompts refused before any synthesis."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest

from cosyvoice.audio.io import read_audio, to_mono
from cosyvoice.errors import PromptError
from cosyvoice.voice.fit import FitConfig, FitState, FitTools, fit, load_prompt, prompt_sha256
from cosyvoice.voice.fit_score import ScoreWeights
from cosyvoice.voice.profile import VoiceProfile
from cosyvoice.voice.space import VoicePoint, VoiceSpace
from tests.conftest import require_kokoro

VOICES = ["af_heart", "am_michael", "bf_emma"]
# one short text and a 4-dimensional search (2 voices × 2 halves): ~5 s per generation
TINY = dict(texts=("Hello there, my friend.",), n_toward=2, n_spread=0, popsize=4,
            workers=2, max_generations=2)


def _profile() -> VoiceProfile:
    return VoiceProfile(180.0, 140.0, 240.0, 0.6, [600.0, 1700.0, 2700.0], [-5.0] * 80,
                        [1.0] * 80, 11025.0, 4.0, 0.8, 22050, 3.0)


@pytest.fixture(scope="module")
def tools() -> Iterator[FitTools]:
    """Kokoro, GE2E and a voice space of three voices measured on one short text."""
    import torch

    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.speaker.encoder import SpeakerEncoder

    require_kokoro()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    kokoro, encoder = KokoroModel.load(threads=1), SpeakerEncoder.load()
    points = {}
    for name in VOICES:
        wav = kokoro.infer(kokoro.g2p("The cat sat on the warm mat.", "en-us"), name)
        points[name] = VoicePoint(name, "en", encoder.embed(wav, kokoro.sample_rate),
                                  _profile())
    yield FitTools(kokoro, encoder, VoiceSpace("test", points))
    # the worker's later files compare in-process output with the app's sample for sample
    # (tests/server/test_cosyvoice_app.py): torch's thread count must be the default again
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def prompt(real_female_prompt) -> tuple[np.ndarray, int]:
    data, sr = read_audio(real_female_prompt)
    return to_mono(data)[: 4 * sr], sr  # 4 s: not split (fit and check on the whole)


@pytest.fixture(scope="module")
def reference(tools, prompt):
    """The TINY fit run through, and the progress it reported: the first test's subject and
    the second's uninterrupted run (one fit fewer)."""
    seen = []
    return fit(*prompt, tools, FitConfig(**TINY), budget_s=600, progress_cb=seen.append), seen


def test_a_fit_is_a_pack_with_provenance_and_deterministic(tools, prompt, reference):
    a, seen = reference
    assert a.pack.shape == (510, 256) and a.pack.dtype == np.float32
    assert np.isfinite(a.pack).all()
    p = a.provenance
    assert p["prompt_sha256"] == prompt_sha256(*prompt) and p["generations"] == 2
    assert p["evaluations"] == 1 + 2 * 5  # the start, then 4 candidates + the mean a generation
    assert p["stopped"] == a.stopped == "generations"
    assert set(p["encoders"]) == {"kokoro", "ge2e", "space"} and p["lang"] == "en"
    assert set(p["scores"]) == {"start", "final"}
    assert p["start_blend"].split(":")[0] in ("af_heart", "bf_emma")  # a woman's prompt
    json.dumps(p)  # what a saved voice keeps
    assert [g.generation for g in seen] == [1, 2] and seen[-1].evaluations == 11
    assert seen[0].elapsed_s < seen[1].elapsed_s and seen[1].best.total >= seen[0].start.total
    again = fit(*prompt, tools, FitConfig(**TINY), budget_s=600)
    assert np.array_equal(a.pack, again.pack)
    other = fit(*prompt, tools, FitConfig(**{**TINY, "seed": 1}), budget_s=600)
    assert other.state.cma["mean"] != a.state.cma["mean"]


def test_a_resumed_fit_ends_where_an_uninterrupted_one_does(tools, prompt, reference):
    """Stopped part-way through generation 2 (as a restart stops it: within a text), the fit
    drops that generation; resumed from the state it returned, it ends as one that ran
    through."""
    whole, _ = reference
    reported, asked = [], []

    def stop() -> bool:  # after generation 1: the loop's check, then 3 steps of generation 2
        if reported:
            asked.append(True)
        return len(asked) > 4

    first = fit(*prompt, tools, FitConfig(**TINY), budget_s=600, progress_cb=reported.append,
                stop=stop)
    assert first.stopped == "requested" and first.provenance["generations"] == 1
    assert first.state.evaluations == 1 + 5 and len(first.state.history) == 2
    saved = json.loads(json.dumps(first.state.to_dict()))  # as a job keeps it on disk
    resumed = fit(*prompt, tools, FitConfig(**TINY), budget_s=600, resume_state=saved)
    assert resumed.provenance["generations"] == 2
    assert np.array_equal(resumed.pack, whole.pack)
    assert resumed.state.cma["mean"] == whole.state.cma["mean"]
    assert [h["score"] for h in resumed.state.history] == \
        [h["score"] for h in whole.state.history]
    with pytest.raises(PromptError, match="another prompt"):
        fit(prompt[0][: 3 * prompt[1]], prompt[1], tools, FitConfig(**TINY),
            resume_state=FitState.from_dict(saved))
    with pytest.raises(PromptError, match="other settings"):
        fit(*prompt, tools, FitConfig(**{**TINY, "sigma0": 0.5}), resume_state=saved)


def test_stops_on_request_on_its_budget_and_without_progress(tools, prompt):
    cfg = FitConfig(**{**TINY, "max_generations": 0})
    asked = fit(*prompt, tools, cfg, budget_s=600, stop=lambda: True)
    assert asked.stopped == "requested" and asked.provenance["generations"] == 0
    blend = tools.kokoro.pack(asked.provenance["start_blend"])
    assert np.allclose(asked.pack, blend, atol=1e-3)  # nothing searched: the blend itself
    short = fit(*prompt, tools, cfg, budget_s=0.1)
    assert short.stopped == "budget" and short.provenance["generations"] == 1  # one at least
    # scored by the prior alone, the start (theta = 0) is the best there is: every later
    # mean is worse, so the search stops after `patience` generations without progress
    flat = FitConfig(**{**TINY, "max_generations": 6, "patience": 2,
                        "weights": ScoreWeights(sim=0.0, f0=0.0, prior=1.0)})
    stale = fit(*prompt, tools, flat, budget_s=600)
    assert stale.stopped == "converged" and stale.provenance["generations"] == 2
    assert stale.state.stale == 2 and stale.provenance["chosen_generation"] == 0
    assert not any(stale.state.best_theta)


def test_bad_prompts_are_refused_before_any_synthesis(tools, tmp_path, prompt):
    import soundfile as sf

    sr = 22050
    with pytest.raises(PromptError, match="silent"):
        fit(np.zeros(sr * 4, np.float32), sr, tools, FitConfig(**TINY))
    with pytest.raises(PromptError, match="damaged"):
        fit(np.full(sr * 4, np.nan, np.float32), sr, tools, FitConfig(**TINY))
    rng = np.random.default_rng(0)
    with pytest.raises(PromptError, match="voiced speech"):  # noise: no pitch
        fit(0.1 * rng.standard_normal(sr * 4).astype(np.float32), sr, tools,
            FitConfig(**TINY))
    short = tmp_path / "short.wav"
    sf.write(short, prompt[0][: prompt[1]], prompt[1])  # 1 s
    with pytest.raises(PromptError, match="3–30 s"):
        load_prompt(short)
    wav, got_sr = load_prompt(prompt_file(tmp_path, prompt))
    assert got_sr == 22050 and 3.0 < len(wav) / got_sr <= 4.0


def prompt_file(tmp_path, prompt):
    import soundfile as sf

    path = tmp_path / "prompt.wav"
    sf.write(path, prompt[0], prompt[1])
    return path
