"""The CosyVoice engine in-process, on tiny folders of our own making (tests/cosyvoice_folder.py,
no oracle): bad folders go FAILED with the named reason, unload/reload states, the Synthesizer's
fallback to the offline engine and its 503 for a named failed engine, and saved voices kept per
engine. Synthesis through the real server: tests/server/test_cosyvoice_app.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from cosyvoice.engine.cosyvoice.engine import model_spec
from cosyvoice.errors import ModelError, TextError
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.pipeline import SynthesisRequest
from tests.conftest import local_services


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _manager(version: int, path: Path | str) -> ModelManager:
    return ModelManager("cpu", [model_spec(version, str(path))])


@pytest.mark.parametrize("breakage, words", [
    ("missing", "missing flow.pt"),
    ("v2_as_v3", "is a CosyVoice2 folder (it has cosyvoice2.yaml); load it as cosyvoice2"),
    ("truncated", "hift.pt is truncated or not a PyTorch file; download it again"),
    ("shapes", "llm.pt: tensor"),
])
def test_a_bad_folder_goes_failed_naming_the_file(cv_folder_v3, cv_folder_v2, tmp_path,
                                                   breakage, words):
    folder = _copy(cv_folder_v3, tmp_path / "folder")
    if breakage == "missing":
        (folder / "flow.pt").unlink()
    elif breakage == "v2_as_v3":
        folder = cv_folder_v2
    elif breakage == "truncated":
        data = (folder / "hift.pt").read_bytes()
        (folder / "hift.pt").write_bytes(data[: len(data) // 2])
    else:
        state = torch.load(folder / "llm.pt", weights_only=True)
        key = next(k for k in state if k.startswith("speech_embedding"))
        state[key] = torch.zeros(state[key].shape[0], state[key].shape[1] + 1)
        torch.save(state, folder / "llm.pt")
    manager = _manager(3, folder)
    with pytest.raises(ModelError, match="failed to load"):
        manager.load("cosyvoice3")
    (state,) = manager.states()
    assert state["state"] == "FAILED" and words in state["reason"], state["reason"]
    assert state["location"] == str(folder)


def test_no_folder_is_a_failed_load_that_says_how_to_give_one():
    manager = _manager(3, "")
    with pytest.raises(ModelError):
        manager.load("cosyvoice3")
    assert "--model-dir" in manager.states()[0]["reason"]


def test_load_from_unload_and_reload(cv_folder_v3, tmp_path):
    manager = _manager(3, tmp_path / "nothing-here")
    with pytest.raises(ModelError, match="does not exist"):
        manager.load("cosyvoice3")
    manager.load_from("cosyvoice3", str(cv_folder_v3))  # FAILED → READY from the new folder
    assert manager.states()[0]["state"] == "READY"
    synth = manager.get("cosyvoice3")
    assert synth.version == 3 and synth.sample_rate == 24000 and len(synth.speakers) == 2
    with pytest.raises(ModelError):  # a READY model keeps its folder when the new one fails
        manager.load_from("cosyvoice3", str(tmp_path / "nothing-here"))
    state = manager.states()[0]
    assert state["state"] == "READY" and state["location"] == str(cv_folder_v3)
    assert manager.get("cosyvoice3") is synth and "previous instance" in state["reason"]
    manager.reload("cosyvoice3")
    assert manager.get("cosyvoice3") is not synth
    assert manager.unload("cosyvoice3")["freed"] is True
    assert manager.states()[0]["state"] == "UNLOADED"


def test_the_offline_engine_answers_when_the_default_engine_failed(tmp_path):
    services = local_services(tmp_path, engine="cosyvoice3",
                              model_dir=str(tmp_path / "no-such-folder"))
    synth = services.synth
    assert list(services.engines) == ["cosyvoice3", "offline"]
    assert services.manager.load_all(required_only=False)["cosyvoice3"] == "FAILED"
    states = {e["name"]: e for e in synth.engine_states()}
    assert states["cosyvoice3"]["state"] == "FAILED" and "does not exist" in states[
        "cosyvoice3"]["reason"]
    view, notes = synth.route(SynthesisRequest(text="Hi."))
    assert view.capabilities.name == "offline"
    assert "cosyvoice3 engine is not available" in notes[0] and "does not exist" in notes[0]
    with pytest.raises(ModelError, match="cosyvoice3 engine is not available.*does not exist"):
        synth.route(SynthesisRequest(text="Hi.", engine="cosyvoice3"))
    with pytest.raises(TextError, match="unknown engine 'cosyvoice2'"):
        synth.route(SynthesisRequest(text="Hi.", engine="cosyvoice2"))


def test_model_dir_without_engine_adds_the_folder_version(tmp_path, cv_folder_v2):
    services = local_services(tmp_path, model_dir=str(cv_folder_v2))
    assert list(services.engines) == ["offline", "cosyvoice2"]
    assert services.synth.default_engine == "offline"
    caps = services.synth.using("cosyvoice2").capabilities
    assert caps.voices.keys() == {"tiny-female", "tiny-male"} and "preset" in caps.modes
    assert caps.sample_rate == 24000 and caps.transcript_modes == ("clone",)


def test_a_saved_voice_is_offered_by_its_engine_only(tmp_path, cv_folder_v3,
                                                      real_female_prompt):
    from cosyvoice.voice.store import save_from_prompt

    services = local_services(tmp_path, engine="cosyvoice3", model_dir=str(cv_folder_v3))
    synth = services.synth
    saved = save_from_prompt(synth.voices, synth, "Cate cv3", real_female_prompt,
                             "a transcript")
    assert saved.engine == "cosyvoice3" and (saved.path / "voice.pt").is_file()
    assert "speech_token" in " ".join(saved.engine_voice())  # the spk2info form
    assert synth.saved_voice_names() == ["Cate cv3"]
    offline = synth.using("offline")
    assert offline.saved_voice_names() == [] and "Cate cv3" not in offline.voice_names()
    with pytest.raises(TextError, match="unknown voice 'Cate cv3'"):
        offline.resolve_voice("Cate cv3")
    assert synth.resolve_voice("Cate cv3")[1].engine == "cosyvoice3"
