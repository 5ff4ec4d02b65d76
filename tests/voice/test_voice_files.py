"""Fitted voices in the store and voice files (export/import) of every kind: a fitted pack
and its provenance round-trip, damaged packs set the voice aside, and an import refuses
each kind of bad file (the catalogue below) with a message, writing nothing."""

from __future__ import annotations

import io
import json
import re
import zipfile

import numpy as np
import pytest
import soundfile as sf

from cosyvoice.errors import ConflictError, NotFoundError, UploadTooLargeError
from cosyvoice.state_files import DAMAGED, DamagedFile
from cosyvoice.voice.blend import Blend
from cosyvoice.voice.fitted import check_pack
from cosyvoice.voice.profile import VoiceProfile
from cosyvoice.voice.store import VoiceNameError, VoiceStore
from cosyvoice.voice.transfer import (
    MAX_FILE_BYTES,
    VoiceFileError,
    export_voice,
    import_voice,
    read_voice_file,
)

SR = 22050
PROVENANCE = {"method": "test", "lang": "en", "prompt_sha256": "ab" * 32, "prompt_s": 6.8,
              "prompt_f0_hz": 193.9, "start_blend": "af_heart:1", "generations": 3,
              "budget_s": 240.0, "date": "2026-12-07T00:00:00+00:00", "theta": [0.1] * 14,
              "scores": {"start": {"sim": 0.52, "check": 0.59, "f0_st": -3.0, "total": 0.4},
                         "final": {"sim": 0.55, "check": 0.6, "f0_st": -1.1, "total": 0.5}}}


def _pack(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (510, 256)).astype(np.float32)


@pytest.fixture
def store(tmp_path) -> VoiceStore:
    return VoiceStore(tmp_path / "voices", max_voices=5, reserved=("joe",))


def _prompt_voice(store: VoiceStore, name: str = "Said") -> None:
    t = np.arange(3 * SR) / SR
    wav = (0.3 * np.sin(2 * np.pi * 150 * t)).astype(np.float32)
    profile = VoiceProfile(150.0, 140.0, 160.0, 0.5, [600.0, 1700.0, 2700.0], [-5.0] * 80,
                           [1.0] * 80, 11025.0, 4.0, 0.8, SR, 3.0)
    store.save(name, wav, SR, profile, "a transcript")


def test_a_fitted_voice_is_listed_with_its_kind_and_speaks_its_pack(store):
    pack = _pack()
    voice = store.save_fitted("My Fit", pack, PROVENANCE)
    assert voice.kind == "fitted" and np.array_equal(voice.pack(), pack)
    s = store.get("my fit").summary()
    assert (s["kind"], s["engine"], s["name"]) == ("fitted", "offline", "My Fit")
    assert s["fit"]["scores"] == {"before": {"sim": 0.52, "check": 0.59, "f0_st": -3.0},
                                  "after": {"sim": 0.55, "check": 0.6, "f0_st": -1.1}}
    assert s["fit"]["prompt_sha256"] == "ab" * 32 and s["fit"]["budget_s"] == 240.0
    assert "theta" not in s["fit"]  # profile.json keeps it; the listing does not
    meta = json.loads((voice.path / "profile.json").read_text())
    assert meta["fit"]["theta"] == [0.1] * 14 and not (voice.path / "prompt.wav").exists()
    with pytest.raises(ConflictError):
        store.save_fitted("MY FIT", pack, PROVENANCE)


@pytest.mark.parametrize("bad, phrase", [
    (np.zeros((510, 128), np.float32), "expected (510, 256)"),
    (np.zeros((510, 256), np.float64), "float32"),
    (np.full((510, 256), np.nan, np.float32), "NaN"),
    (np.full((510, 256), 1e6, np.float32), "beyond"),
    ([[0.0] * 256] * 510, "not an array"),
])
def test_bad_packs_are_refused(store, bad, phrase):
    with pytest.raises(DamagedFile, match=re.escape(phrase)):
        check_pack(bad)
    with pytest.raises(DamagedFile):
        store.save_fitted("Bad", bad, PROVENANCE)
    assert store.list() == []


def test_a_damaged_pack_on_disk_sets_the_voice_aside(store):
    voice = store.save_fitted("Fit", _pack(), PROVENANCE)
    np.save(voice.path / "pack.npy", np.zeros((3, 3), np.float32))
    with pytest.raises(NotFoundError, match="damaged on disk"):
        store.get("Fit").pack()
    assert store.list() == [] and any(DAMAGED in p.name for p in store.root.iterdir())
    gone = store.save_fitted("Gone", _pack(), PROVENANCE)
    (gone.path / "pack.npy").unlink()
    assert store.find("Gone") is None  # listed no more: set aside whole


def test_every_kind_round_trips_through_one_file(store, tmp_path):
    store.save_fitted("Fit", _pack(1), PROVENANCE)
    _prompt_voice(store)
    store.save_blend("Mix", Blend((("af_heart", 0.5), ("af_bella", 0.5))))
    other = VoiceStore(tmp_path / "elsewhere", max_voices=5, reserved=("joe",))
    for name, kind, members in (("Fit", "fitted", {"voice.json", "pack.npy"}),
                                ("Said", "saved", {"voice.json", "prompt.wav"}),
                                ("Mix", "blend", {"voice.json"})):
        data = export_voice(store.get(name))
        assert set(zipfile.ZipFile(io.BytesIO(data)).namelist()) == members
        got = import_voice(other, data)
        assert (got.name, got.kind) == (name, kind)
        before, after = store.get(name).summary(), got.summary()
        assert {k: v for k, v in before.items() if k != "created"} == \
            {k: v for k, v in after.items() if k != "created"}
    assert np.array_equal(other.get("Fit").pack(), _pack(1))
    renamed = import_voice(other, export_voice(store.get("Fit")), "Fit on B")
    assert renamed.name == "Fit on B" and renamed.kind == "fitted"
    with pytest.raises(ConflictError, match="already saved"):
        import_voice(other, export_voice(store.get("Fit")))


def _file(members: dict[str, bytes], header: dict | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        if header is not None:
            z.writestr("voice.json", json.dumps(header))
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)
    return buf.getvalue()


def _header(**voice) -> dict:
    return {"format": "cosyvoice-voice", "version": 1, "kind": "fitted",
            "voice": {"name": "Imported", "created": 1.0, "engine": "offline",
                      "kind": "fitted", "fit": PROVENANCE, **voice}}


def _wav(seconds: float, sr: int = SR, fmt: str = "WAV") -> bytes:
    buf = io.BytesIO()
    sf.write(buf, np.zeros(int(seconds * sr), np.float32), sr, format=fmt)
    return buf.getvalue()


GOOD_PACK = _npy(_pack())
CATALOGUE = [
    ("not a zip", b"just some bytes", "not a voice file"),
    ("no voice.json", _file({"pack.npy": GOOD_PACK}), "no voice.json"),
    ("a path", _file({"../pack.npy": GOOD_PACK}, _header()), "no folders or paths"),
    ("a folder", _file({"sub/pack.npy": GOOD_PACK}, _header()), "no folders or paths"),
    ("an absolute path", _file({"/etc/passwd": b"x"}, _header()), "no folders or paths"),
    ("another member", _file({"run.sh": b"rm -rf /"}, _header()), "holds only"),
    ("a newer format", _file({"pack.npy": GOOD_PACK}, {**_header(), "version": 2}),
     "version 2; this app reads version 1"),
    ("another format", _file({"pack.npy": GOOD_PACK}, {**_header(), "format": "x"}),
     "does not describe a voice"),
    ("voice.json not JSON", _file({"voice.json": b"{nope", "pack.npy": GOOD_PACK}),
     "not JSON"),
    ("no pack", _file({}, _header()), "pack.npy is missing"),
    ("a pickled pack", _file({"pack.npy": _npy(np.array([{"a": 1}], dtype=object))},
                             _header()), "damaged"),
    ("a pack of the wrong shape", _file({"pack.npy": _npy(np.zeros((10, 256), np.float32))},
                                        _header()), "expected (510, 256)"),
    ("a pack with NaN", _file({"pack.npy": _npy(np.full((510, 256), np.nan, np.float32))},
                              _header()), "NaN"),
    ("a pack that is not npy", _file({"pack.npy": b"\x93NUMPY garbage"}, _header()),
     "damaged"),
    ("a fitted voice with a prompt", _file({"pack.npy": GOOD_PACK, "prompt.wav": _wav(3)},
                                           _header()), "holds no prompt.wav"),
    ("no provenance", _file({"pack.npy": GOOD_PACK}, _header(fit="x")), "provenance"),
    ("a prompt that is not WAV", _file({"prompt.wav": _wav(3, fmt="FLAC")},
                                       _header(kind=None, fit=None)), "mono WAV"),
    ("a prompt too long", _file({"prompt.wav": _wav(61)}, _header(kind=None, fit=None)),
     "at most 60 s"),
    ("a bad name", _file({"pack.npy": GOOD_PACK}, _header(name="../etc")), "not allowed"),
    ("a name of a built-in voice", _file({"pack.npy": GOOD_PACK}, _header(name="JOE")),
     "built-in"),
    ("no name", _file({"pack.npy": GOOD_PACK}, _header(name=None)), "must be text"),
]


@pytest.mark.parametrize("what, data, phrase", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_bad_voice_files_are_refused_saying_why(store, what, data, phrase):
    with pytest.raises((VoiceFileError, VoiceNameError)) as e:
        import_voice(store, data)
    assert phrase in str(e.value), (what, str(e.value))
    assert e.value.http_status == 422
    assert not store.root.exists() or not [p for p in store.root.iterdir()
                                           if not p.name.startswith(".")]


def test_size_limits_come_before_reading(store):
    with pytest.raises(UploadTooLargeError):
        read_voice_file(b"\0" * (MAX_FILE_BYTES + 1))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("voice.json", json.dumps(_header()))
        z.writestr("pack.npy", b"\0" * (8 * 2**20))  # 8 MB unpacked from a few KB
    assert len(bomb.getvalue()) < 100_000
    with pytest.raises(VoiceFileError, match="unpacked"):
        import_voice(store, bomb.getvalue())


def test_a_good_hand_made_file_imports_and_keeps_no_foreign_keys(store):
    data = _file({"pack.npy": GOOD_PACK},
                 _header(name="Hand made", extra="dropped", prompt={"file": "/etc/x"}))
    voice = import_voice(store, data, None)
    meta = json.loads((voice.path / "profile.json").read_text())
    assert voice.kind == "fitted" and "extra" not in meta
    assert meta["prompt"]["file"] == "prompt.wav"  # never a path from a file
