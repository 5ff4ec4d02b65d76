"""VoiceStore: names, persistence, rename, delete, bounds, atomicity, other processes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cosyvoice.audio.io import read_audio, resample, to_mono
from cosyvoice.errors import ConflictError, NotFoundError
from cosyvoice.state_files import DAMAGED
from cosyvoice.voice.profile import VoiceProfile
from cosyvoice.voice.store import VoiceNameError, VoiceStore, check_name, slug

SR = 22050


@pytest.fixture(scope="module")
def prompt(real_female_prompt) -> tuple[np.ndarray, VoiceProfile]:
    """A real recording at 22.05 kHz and its measured profile."""
    data, sr = read_audio(real_female_prompt)
    wav = resample(to_mono(data), sr, SR)
    return wav, VoiceProfile.from_audio(wav, SR)


@pytest.fixture
def store(tmp_path) -> VoiceStore:
    return VoiceStore(tmp_path / "voices", max_voices=3, reserved=("joe", "baker"))


@pytest.mark.parametrize("name", ["Cate", "my voice 2", "a.b-c_d", "小明", "Zoë", "x" * 40])
def test_good_names(name):
    assert check_name(f"  {name} ") == name


@pytest.mark.parametrize("name, phrase", [
    ("", "give the voice a name"), ("   ", "give the voice a name"), ("x" * 41, "at most 40"),
    ("../etc", "not allowed"), ("a/b", "not allowed"), ("a\\b", "not allowed"),
    (".hidden", "not allowed"), ("..", "not allowed"), ("_x", "not allowed"),
    ("a\nb", "not allowed"), ("a\x00b", "not allowed"), ("semi;colon", "not allowed"),
    ("JOE", "built-in"), (None, "must be text"),
])
def test_bad_names_say_why(name, phrase):
    with pytest.raises(VoiceNameError, match=phrase):
        check_name(name, reserved=("joe",))


def test_slug_is_safe_and_distinct():
    assert slug("小明").startswith("voice-") and slug("小明") != slug("小红")
    assert slug("My Voice") == slug("my voice")  # names are unique case-insensitively
    assert slug("a b") != slug("a-b")
    assert "/" not in slug("x" * 40) and len(slug("x" * 40)) <= 33


def test_save_list_find_and_reopen(store, prompt, tmp_path):
    wav, profile = prompt
    saved = store.save("Cate", wav, SR, profile, transcript="hello there", notes=["n1"])
    assert saved.prompt_path.is_file() and saved.transcript == "hello there"
    meta = json.loads((saved.path / "profile.json").read_text())
    assert meta["name"] == "Cate" and meta["prompt"]["sample_rate"] == SR
    again = VoiceStore(tmp_path / "voices")  # a new process sees the same voice
    found = again.find("cate")
    assert found is not None and found.name == "Cate"
    assert found.profile.f0_median_hz == pytest.approx(profile.f0_median_hz)
    stored, sr = read_audio(found.prompt_path)
    assert sr == SR and abs(len(stored) - len(wav)) == 0
    assert again.names() == ["Cate"]
    assert found.summary()["f0_median_hz"] == pytest.approx(profile.f0_median_hz, abs=0.1)


def test_duplicates_reserved_and_bound(store, prompt):
    wav, profile = prompt
    store.save("one", wav, SR, profile)
    with pytest.raises(ConflictError, match="already saved"):
        store.save("ONE", wav, SR, profile)
    with pytest.raises(VoiceNameError, match="built-in"):
        store.save("Baker", wav, SR, profile)
    store.save("two", wav, SR, profile)
    store.save("three", wav, SR, profile)
    with pytest.raises(ConflictError, match="delete one first"):
        store.save("four", wav, SR, profile)
    assert store.names() == ["one", "three", "two"]


def test_rename_and_delete(store, prompt):
    wav, profile = prompt
    store.save("old name", wav, SR, profile)
    store.save("other", wav, SR, profile)
    renamed = store.rename("OLD NAME", "New Name")
    assert renamed.name == "New Name" and renamed.path.name == slug("New Name")
    assert store.find("old name") is None
    assert store.rename("new name", "NEW NAME").name == "NEW NAME"  # case-only rename
    with pytest.raises(ConflictError):
        store.rename("NEW NAME", "Other")
    with pytest.raises(NotFoundError, match="no saved voice"):
        store.rename("missing", "x")
    assert store.delete("new name") == "NEW NAME"
    with pytest.raises(NotFoundError, match="saved voices: other"):
        store.delete("new name")
    assert [p.name for p in store.root.iterdir() if not p.name.startswith(".")] == \
        [slug("other")]


def test_broken_folders_are_set_aside_and_partial_ones_swept(store, prompt):
    wav, profile = prompt
    store.root.mkdir(parents=True)
    (store.root / ".tmp-crashed").mkdir()  # an interrupted save
    (store.root / ".tmp-crashed" / "prompt.wav").write_bytes(b"RIFF")
    broken = store.root / slug("Broken")
    broken.mkdir()
    (broken / "profile.json").write_text("{not json")
    assert store.list() == [] and store.find("Broken") is None
    [aside] = store.root.glob(broken.name + DAMAGED + "*")  # kept, not deleted
    assert (aside / "profile.json").read_text() == "{not json"
    store.save("Broken", wav, SR, profile)  # a new voice of that name beside it
    assert store.names() == ["Broken"]
    assert not (store.root / ".tmp-crashed").exists()
    assert (aside / "profile.json").read_text() == "{not json"


def test_a_damaged_engine_voice_file_sets_the_voice_aside(store, prompt):
    import torch

    wav, _ = prompt
    store.save("Engine voice", wav, SR, {"embedding": torch.ones(4)}, engine="cosyvoice3")
    voice = store.get("Engine voice")
    assert torch.equal(voice.engine_voice()["embedding"], torch.ones(4))
    for damage in (b"", b"PK\x03\x04 not a zip", b"\x80\x02}q\x00."):
        (voice.path / "voice.pt").write_bytes(damage)
        with pytest.raises(NotFoundError, match="damaged on disk and has been set aside"):
            voice.engine_voice()
        assert store.names() == [] and not voice.path.exists()
        [aside] = store.root.glob(voice.path.name + DAMAGED + "*")
        assert (aside / "voice.pt").read_bytes() == damage
        shutil.rmtree(aside)
        store.save("Engine voice", wav, SR, {"embedding": torch.ones(4)}, engine="cosyvoice3")
        voice = store.get("Engine voice")


def test_odd_lookups_never_escape_the_folder(store, prompt, tmp_path):
    wav, profile = prompt
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "profile.json").write_text("{}")
    for name in ("../outside", "/etc/passwd", "", "   ", "..", "\x00"):
        assert store.find(name) is None
    with pytest.raises(NotFoundError):
        store.delete("../outside")
    assert outside.is_dir()


def test_concurrent_saves_from_two_processes(tmp_path, prompt):
    """The flock serializes writers: two processes saving 3 voices each into a store bounded
    at 4 end with exactly 4 voices, no duplicate, no leftover temp folder."""
    wav, profile = prompt
    src = VoiceStore(tmp_path / "src", max_voices=10)
    src.save("seed", wav, SR, profile)
    code = (
        "import sys; from cosyvoice.voice.store import VoiceStore; from cosyvoice.errors "
        "import ConflictError; from cosyvoice.audio.io import read_audio\n"
        f"src = VoiceStore({str(tmp_path / 'src')!r}).get('seed')\n"
        "wav, sr = read_audio(src.prompt_path)\n"
        f"st = VoiceStore({str(tmp_path / 'shared')!r}, max_voices=4)\n"
        "for i in range(3):\n"
        "    try: st.save(f'{sys.argv[1]}-{i}', wav[:, 0], sr, src.profile)\n"
        "    except ConflictError: pass\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, tag]) for tag in ("a", "b")]
    assert [p.wait(120) for p in procs] == [0, 0]
    shared = VoiceStore(tmp_path / "shared")
    assert len(shared.names()) == 4 and len(set(shared.names())) == 4
    assert not [p for p in shared.root.iterdir() if p.name.startswith((".tmp-", ".trash-"))]
