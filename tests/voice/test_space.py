"""Cloning v2: Kokoro's voice space measured at setup (hash-keyed, idempotent), the nearest
voice of a Kokoro voice's own clip is that voice, clone mode speaks through a blend of the
prompt's nearest voices, a saved v2 voice round-trips, and without the space clone mode
falls back to joe + adapter and says so."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import numpy as np
import pytest

from cosyvoice.voice.blend import Blend
from cosyvoice.voice.profile import VoiceProfile
from cosyvoice.voice.space import (
    FILE_NAME,
    CloneTarget,
    PromptVoice,
    VoicePoint,
    VoiceSpace,
    mix,
    space_key,
)
from tests.conftest import local_services, require_kokoro

# Three voices (setup measures all 36 in ~9 CPU-minutes; each costs ~15 s): two women and
# a man, American and British, so that the nearest-voice test has wrong answers to avoid.
VOICES = ["af_heart", "am_michael", "bf_emma"]
TEXT = "The morning train was late, so we shared a pot of coffee on the platform."


def _profile(f0: float, formant: float, level: float) -> VoiceProfile:
    return VoiceProfile(f0, f0 * 0.8, f0 * 1.3, 0.6, [formant, 3 * formant, 5 * formant],
                        [level] * 80, [1.0] * 80, 11025.0, 4.0, 0.8, 22050, 3.0)


def test_blend_of_the_nearest_voices_and_its_derived_profile():
    e = np.eye(4, dtype=np.float32)
    space = VoiceSpace("k", {
        "af_a": VoicePoint("af_a", "en", e[0], _profile(200.0, 600.0, -4.0)),
        "am_b": VoicePoint("am_b", "en", e[1], _profile(100.0, 500.0, -6.0)),
        "bf_c": VoicePoint("bf_c", "en", e[2], _profile(220.0, 620.0, -5.0)),
        "zf_d": VoicePoint("zf_d", "zh", e[0], _profile(210.0, 610.0, -5.0)),
    })
    prompt = np.array([0.9, 0.3, 0.1, 0.0], np.float32)
    assert [n for n, _ in space.ranked(prompt, "en")] == ["af_a", "am_b", "bf_c"]
    assert [n for n, _ in space.ranked(prompt, "zh")] == ["zf_d"]  # the text's language only
    blend = space.blend_for(prompt, "en", k=2, tau=0.1)
    w = blend.weights()
    assert list(w) == ["af_a", "am_b"]
    gap = (0.9 - 0.3) / np.linalg.norm(prompt)
    assert w["am_b"] / w["af_a"] == pytest.approx(np.exp(-gap / 0.1), rel=1e-5)
    assert space.blend_for(prompt, "en", k=1).spec == "af_a:1"
    half = mix([(space.points["af_a"].profile, 0.5), (space.points["am_b"].profile, 0.5)])
    assert half.f0_median_hz == pytest.approx(np.sqrt(200.0 * 100.0))  # geometric
    assert half.mel_mean[0] == pytest.approx(-5.0)
    alone, own = mix([(space.points["bf_c"].profile, 1.0)]), space.points["bf_c"].profile
    assert alone.f0_median_hz == pytest.approx(own.f0_median_hz)
    assert alone.formants_hz == pytest.approx(own.formants_hz)
    assert alone.mel_mean == own.mel_mean and alone.mel_std == own.mel_std
    target = CloneTarget.locate(space, prompt)
    assert set(target.blends) == {"en", "zh"}
    back = CloneTarget.from_dict(target.to_dict())
    assert {k: b.spec for k, b in back.blends.items()} == \
        {k: b.spec for k, b in target.blends.items()}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """A models folder whose kokoro/ holds the installed model and a few voice packs, and
    the voice space that setup measures for them."""
    from cosyvoice.tools.embed_kokoro_voices import ensure

    src = require_kokoro()
    root = tmp_path_factory.mktemp("models")
    kokoro = root / "kokoro"
    (kokoro / "voices").mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            (kokoro / f.name).symlink_to(f.resolve())
    for v in VOICES:
        (kokoro / "voices" / f"{v}.bin").symlink_to((src / "voices" / f"{v}.bin").resolve())
    (kokoro / FILE_NAME).unlink(missing_ok=True)
    assert ensure(kokoro).startswith("voice space measured: 3 voices")
    return root


@pytest.mark.slow
def test_setup_measures_once_keyed_by_the_weights(models):
    from cosyvoice.speaker.encoder import default_encoder_path
    from cosyvoice.tools.embed_kokoro_voices import ensure
    from cosyvoice.tools.setup_kokoro import load_manifest
    from cosyvoice.voice.space import current_key

    path = models / "kokoro" / FILE_NAME
    stamp = path.stat().st_mtime_ns
    t0 = time.perf_counter()
    assert ensure(models / "kokoro").startswith("voice space present")
    assert time.perf_counter() - t0 < 5 and path.stat().st_mtime_ns == stamp  # idempotent
    space = VoiceSpace.read(path, current_key())
    assert sorted(space.points) == VOICES
    assert {p.lang for p in space.points.values()} == {"en"}
    assert space.points["am_michael"].profile.f0_median_hz < \
        space.points["af_heart"].profile.f0_median_hz
    other = copy.deepcopy(load_manifest())
    other["voices"]["sha256"]["af_heart"] = "0" * 64  # another pack: another key
    assert space_key(other, default_encoder_path()) != space.key
    assert VoiceSpace.read(path, space_key(other, default_encoder_path())) is None


@pytest.mark.slow
def test_a_voices_own_clip_finds_that_voice_first(models):
    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.speaker.encoder import SpeakerEncoder

    space = VoiceSpace.read(models / "kokoro" / FILE_NAME)
    kokoro, encoder = KokoroModel.load(models / "kokoro"), SpeakerEncoder.load()
    for voice in ("am_michael", "bf_emma"):
        out = kokoro.speaker(voice).synthesize(TEXT)  # not a setup sentence
        ranked = space.ranked(encoder.embed(out.wav, out.sample_rate), "en")
        assert ranked[0][0] == voice, ranked


@pytest.fixture(scope="module")
def synth(models, tmp_path_factory):
    return local_services(tmp_path_factory.mktemp("clone2"), models_dir=models).synth


@pytest.mark.slow
def test_clone_speaks_through_the_nearest_kokoro_voices(synth, real_female_prompt):
    from cosyvoice.pipeline import SynthesisRequest

    out = synth.synthesize(SynthesisRequest(text=TEXT, mode="clone", seed=1,
                                            prompt_path=str(real_female_prompt)))
    note = [n for n in out.notes if n.startswith("cloned from Kokoro's nearest voices")]
    assert len(note) == 1, out.notes
    assert "af_heart" in note[0] or "bf_emma" in note[0]  # a female prompt: female voices
    assert 2.5 < out.duration_s < 8.0 and np.sqrt(np.mean(out.wav ** 2)) > 0.01
    f0 = VoiceProfile.from_audio(out.wav, out.sample_rate).f0_median_hz
    assert 150 < f0 < 300, f0

    saved = synth.voices.save("Cate v2", *_prompt(synth, real_female_prompt))
    again = synth.voices.get("cate v2")
    assert again.clone is not None and again.path == saved.path
    prompt, voice = synth.prompt_profile(real_female_prompt)
    assert {k: b.spec for k, b in again.clone.blends.items()} == \
        {k: b.spec for k, b in voice.target.blends.items()}
    assert again.summary()["kokoro_blends"]["en"] == voice.target.blends["en"].spec
    spoken = synth.synthesize(SynthesisRequest(text=TEXT, voice="Cate v2", seed=1))
    assert np.array_equal(spoken.wav, out.wav)  # the saved voice is the same clone

    from cosyvoice.engine.offline.engine import OLD_SAVED_NOTE

    synth.voices.save("old style", prompt.wav, prompt.sr, voice.profile)  # profile only
    assert synth.voices.get("old style").clone is None
    old = synth.synthesize(SynthesisRequest(text=TEXT, voice="old style", seed=1))
    assert OLD_SAVED_NOTE in old.notes and np.sqrt(np.mean(old.wav ** 2)) > 0.01


def _prompt(synth, path):
    prompt, voice = synth.prompt_profile(path)
    assert isinstance(voice, PromptVoice) and voice.target is not None
    return prompt.wav, prompt.sr, voice


def test_the_shipped_space_matches_the_pinned_weights():
    """The space shipped with the code is the one setup would measure: keyed by the pinned
    packs, model, encoder and sentences (a change to any of them must re-ship it:
    ``python -m cosyvoice.tools.embed_kokoro_voices --force`` and copy the file), and it
    holds every English and Mandarin voice."""

    from cosyvoice.assets import kokoro_manifest
    from cosyvoice.voice.space import SHIPPED, current_key, voice_lang

    space = VoiceSpace.read(SHIPPED, current_key())
    assert space is not None, f"{SHIPPED} was measured with other weights or sentences"
    packs = kokoro_manifest()["voices"]["sha256"]
    assert sorted(space.points) == sorted(v for v in packs if voice_lang(v) is not None)
    assert len(space.points) == 36


def test_check_says_whether_a_space_must_be_measured(tmp_path, monkeypatch, capsys):
    """``--check`` (run.sh's setup step): 0 with the shipped space, 3 without any."""
    import cosyvoice.voice.space as space_mod
    from cosyvoice.tools.embed_kokoro_voices import main

    assert main(["--dir", str(tmp_path), "--check"]) == 0
    monkeypatch.setattr(space_mod, "SHIPPED", tmp_path / "nothing.json")
    assert main(["--dir", str(tmp_path), "--check"]) == 3
    assert "none matches" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # a check measures nothing


@pytest.mark.slow
def test_without_a_space_clone_falls_back_to_joe_then_finds_a_new_one(
        tmp_path, models, monkeypatch, real_female_prompt):
    """No space matches (weights other than the pinned ones, the background measurement
    still running): clone mode uses joe + adapter and says so; once a measured file appears
    in models/kokoro/, the next clone uses it without a restart."""
    import shutil

    import cosyvoice.engine.offline.engine as engine_mod
    import cosyvoice.voice.space as space_mod
    from cosyvoice.engine.offline.engine import NO_SPACE_NOTE
    from cosyvoice.pipeline import SynthesisRequest

    monkeypatch.setattr(space_mod, "SHIPPED", tmp_path / "nothing.json")
    monkeypatch.setattr(engine_mod, "SPACE_RECHECK_S", 0.0)
    root = tmp_path / "models"
    shutil.copytree(models, root, symlinks=True)
    (root / "kokoro" / FILE_NAME).unlink()
    synth = local_services(tmp_path, models_dir=root).synth
    req = SynthesisRequest(text=TEXT, mode="clone", seed=1, prompt_path=str(real_female_prompt))
    out = synth.synthesize(req)
    assert NO_SPACE_NOTE in out.notes
    assert not any(n.startswith("cloned from Kokoro") for n in out.notes)
    assert np.sqrt(np.mean(out.wav ** 2)) > 0.01
    assert synth.prompt_profile(real_female_prompt)[1].target is None

    shutil.copy(models / "kokoro" / FILE_NAME, root / "kokoro" / FILE_NAME)  # measured now
    again = synth.synthesize(req)
    assert any(n.startswith("cloned from Kokoro") for n in again.notes), again.notes


def test_blend_weights_of_a_saved_target_survive_json():
    target = CloneTarget(np.ones(4, np.float32) / 2,
                         {"en": Blend.from_weights({"af_heart": 3.0, "bf_emma": 1.0})})
    back = CloneTarget.from_dict(target.to_dict())
    assert back.blends["en"].weights() == pytest.approx({"af_heart": 0.75, "bf_emma": 0.25})
    assert np.allclose(back.embedding, 0.5)


def test_the_learned_maps_ridge_fit_recovers_a_linear_map(tmp_path):
    """The trainer's fit and the map's use, on numbers (the map itself is not trained yet:
    docs/kokoro.md, "Cloning")."""
    from cosyvoice.tools.train_clone_map import cv_error, fit
    from cosyvoice.voice.space import CloneMap

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1000, 256))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    truth = rng.normal(size=(4, 256))
    y = x @ truth.T + 5.0  # weights are never negative (the error clips at 0)
    w = fit(x, y, 1e-6)
    assert np.allclose(w[:, :256], truth, atol=1e-3) and np.allclose(w[:, 256], 5.0, atol=1e-3)
    assert cv_error(x, y, 1e-6) < 1e-3 < cv_error(x, y, 10.0)
    path = tmp_path / "map.npz"
    np.savez_compressed(path, weights=w.astype(np.float32), voices=np.array(list("abcd")))
    m = CloneMap.load(path)
    pred = w @ np.append(x[0], 1.0)
    top = [m.voices[i] for i in np.argsort(-pred)[:2] if pred[i] > 0]
    assert list(m.blend_for(x[0], k=2).weights()) == top



def test_the_learned_map_keeps_to_a_sex_and_to_its_weights(tmp_path):
    """The map's blend, restricted to one sex on request; a map trained with other
    weights, or missing, is not read."""
    from cosyvoice.voice.space import CloneMap

    path = tmp_path / "map.npz"
    w = np.zeros((3, 5), np.float32)
    w[:, -1] = 0.1, 0.6, 0.3
    np.savez_compressed(path, weights=w, voices=np.array(["af_a", "am_b", "bf_c"]),
                        lang="en", key="k")
    clone_map = CloneMap.read(path, "k")
    prompt = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    assert clone_map.blend_for(prompt).weights() == pytest.approx(
        {"am_b": 0.6, "bf_c": 0.3, "af_a": 0.1})
    assert clone_map.blend_for(prompt, sex="f").weights() == pytest.approx(
        {"bf_c": 0.75, "af_a": 0.25})
    assert clone_map.blend_for(prompt, k=1, sex="m").spec == "am_b:1"
    assert CloneMap.read(path, "other") is None
    assert CloneMap.read(tmp_path / "missing.npz", "k") is None


def _small_space() -> dict:
    rng = np.random.default_rng(0)
    points = {n: VoicePoint(n, "en", (e := rng.normal(size=256).astype(np.float32))
                            / np.linalg.norm(e), _profile(100.0 + i * 50, 500.0, -5.0))
              for i, n in enumerate(VOICES)}
    return VoiceSpace("k", points, 1.0).to_dict()


def _damaged_spaces() -> dict[str, bytes]:
    good = _small_space()
    short = copy.deepcopy(good)
    short["voices"][1]["embedding"] = short["voices"][1]["embedding"][:100]
    nan = json.dumps(good).replace(str(good["voices"][0]["embedding"][3]), "NaN", 1)
    typed = copy.deepcopy(good)
    typed["voices"][2]["profile"]["f0_median_hz"] = "high"
    text = json.dumps(good)
    return {"empty": b"", "object": b"{}", "truncated": text[: len(text) // 2].encode(),
            "binary": bytes(range(256)) * 8, "short-embedding": json.dumps(short).encode(),
            "nan-embedding": nan.encode(), "profile-types": json.dumps(typed).encode(),
            "voices-not-a-list": json.dumps({**good, "voices": "all"}).encode()}


@pytest.mark.parametrize("kind", list(_damaged_spaces()))
def test_a_damaged_space_is_set_aside_for_setup_to_measure_again(tmp_path, kind):
    from cosyvoice.state_files import DAMAGED

    path = tmp_path / FILE_NAME
    path.write_text(json.dumps(_small_space()))
    assert sorted(VoiceSpace.read(path, "k").points) == VOICES  # the good one reads
    data = _damaged_spaces()[kind]
    path.write_bytes(data)
    assert VoiceSpace.read(path, "k") is None and not path.exists()
    [aside] = tmp_path.glob(FILE_NAME + DAMAGED + "*")
    assert aside.read_bytes() == data
