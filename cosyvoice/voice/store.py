"""Saved voices: the voice profile of a cloning prompt, or a voice blend, kept under a name.

Layout, one folder per voice under ``settings.voices_dir`` (``models/voices/``)::

    voices/
      .lock                    flock(2) held by every change (the app and the CLI share it)
      my-voice-3f2a1c0d/
        profile.json           {"name", "created", "transcript", "prompt": {...},
                                "profile": VoiceProfile.to_dict(),
                                "space": CloneTarget.to_dict()}  (cloning v2 only)
        prompt.wav             the validated prompt: trimmed, peak-normalized, 16-bit mono
      my-blend-0b1c2d3e/
        profile.json           {"name", "created", "blend": {"spec", "weights"}} (no prompt)
      cv-voice-5e6f7a8b/       a voice of an engine that keeps its own form (CosyVoice)
        profile.json           {"name", "created", "engine", "transcript", "prompt": {...}}
        prompt.wav
        voice.pt               the engine's voice: a dict of tensors (spk2info form)
      my-fit-7c8d9e0f/         a fitted voice (cosyvoice.voice.fit): no prompt is kept
        profile.json           {"name", "created", "engine", "kind": "fitted",
                                "fit": provenance (prompt sha256, steps, scores, F0, encoders,
                                budget, date)}
        pack.npy               its Kokoro style pack, (510, 256) float32

Every voice records the engine that measured it (``"engine"``; older voices are the offline
engine's), and only that engine offers it.

A voice is written into a hidden ``.tmp-*`` folder and renamed into place, so a reader or
a crash never sees half a voice; a delete renames the folder away before removing it.
Folder names are derived from the name (safe characters plus a hash), but the name in
``profile.json`` is what counts: lookups read it, case-insensitively. A voice folder that
cannot be read (``profile.json`` missing, not JSON or not what the app wrote; its
``prompt.wav``, ``voice.pt`` or ``pack.npy`` missing, or unreadable when used) is set aside
whole (:mod:`cosyvoice.state_files`): renamed to ``<folder>.damaged-<stamp>``, no longer
listed, never deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosyvoice.audio.io import write_wav_atomic
from cosyvoice.errors import ConflictError, NotFoundError, TextError
from cosyvoice.files import write_json_atomic
from cosyvoice.state_files import (
    DamagedFile,
    ensure_dir,
    is_set_aside,
    read_checked,
    read_json,
    set_aside,
)
from cosyvoice.voice.blend import Blend, parse_blend
from cosyvoice.voice.fitted import check_pack, fit_summary, load_pack
from cosyvoice.voice.profile import VoiceProfile
from cosyvoice.voice.space import CloneTarget, PromptVoice

logger = logging.getLogger(__name__)

NAME_MAX = 40
TRANSCRIPT_MAX = 500
PROFILE_FILE = "profile.json"
PROMPT_FILE = "prompt.wav"
ENGINE_VOICE_FILE = "voice.pt"
PACK_FILE = "pack.npy"
FITTED = "fitted"  # the kind of a voice fitted to a prompt (a style pack, no prompt kept)
OFFLINE = "offline"
WHAT = "saved voice"
# Letters and digits of any script, then also space, '-', '_', '.'; first character a
# letter or digit, so no name can be '.', '..' or hidden; '/' and '\\' can never occur.
_NAME_RE = re.compile(r"[^\W_][\w .-]*")


class VoiceNameError(TextError):
    """A voice name that cannot be used (empty, too long, odd characters, reserved)."""


@dataclass
class SavedVoice:
    """One saved voice as listed: its name, folder, and what was measured."""

    name: str
    path: Path
    created: float
    transcript: str
    prompt: dict[str, Any]
    profile: VoiceProfile | None
    blend: Blend | None = None  # a saved blend (then no prompt and no profile)
    clone: CloneTarget | None = None  # its place in Kokoro's voice space (cloning v2)
    engine: str = OFFLINE  # the engine that measured it, the only one that offers it
    fit: dict[str, Any] | None = None  # a fitted voice's provenance (then pack.npy speaks)

    @property
    def kind(self) -> str:
        """``fitted``, ``blend`` or ``saved`` (a prompt's measured voice)."""
        return FITTED if self.fit is not None else "blend" if self.blend is not None \
            else "saved"

    def pack(self) -> np.ndarray:
        """A fitted voice's ``(510, 256)`` float32 style pack. A damaged file sets the
        voice aside: NotFoundError saying so."""
        pack = read_checked(self.path / PACK_FILE, WHAT, load_pack, unit=self.path,
                            required=True)
        if pack is None:
            raise NotFoundError(f"the saved voice {self.name!r} was damaged on disk and has "
                                "been set aside (see /health/ready); fit it again")
        return pack

    @property
    def prompt_path(self) -> Path:
        return self.path / PROMPT_FILE

    def engine_voice(self) -> dict[str, Any]:
        """The engine's own form of this voice (``voice.pt``, a dict of tensors). A damaged
        file sets the voice aside: NotFoundError saying so."""
        voice = read_checked(self.path / ENGINE_VOICE_FILE, WHAT, load_tensors,
                             unit=self.path, required=True)
        if voice is None:
            raise NotFoundError(f"the saved voice {self.name!r} was damaged on disk and has "
                                "been set aside (see /health/ready); save it again")
        return voice

    def summary(self) -> dict[str, Any]:
        """JSON-friendly description (no mel statistics)."""
        p = self.profile
        if self.fit is not None:
            return {"name": self.name, "kind": FITTED, "engine": self.engine,
                    "created": round(self.created, 3), "fit": fit_summary(self.fit)}
        if self.blend is not None:
            return {"name": self.name, "kind": "blend", "created": round(self.created, 3),
                    "blend": self.blend.spec}  # the offline engine's (Kokoro voices)
        notes = list(self.prompt.get("notes") or [])  # what validating the prompt noticed
        if p is None:
            return {"name": self.name, "kind": "saved", "created": round(self.created, 3),
                    "engine": self.engine, "transcript": self.transcript,
                    "prompt_seconds": self.prompt.get("seconds"), "notes": notes}
        return {"name": self.name, "kind": "saved", "engine": self.engine,
                "created": round(self.created, 3),
                "transcript": self.transcript, "prompt_seconds": self.prompt.get("seconds"),
                "notes": notes,
                "f0_median_hz": _finite(p.f0_median_hz, 1),
                "f0_range_st": _finite(p.f0_range_st, 2),
                "formants_hz": [_finite(f, 1) for f in p.formants_hz],
                "kokoro_blends": ({lang: b.spec for lang, b in self.clone.blends.items()}
                                  if self.clone else None)}


def check_name(name: object, reserved: tuple[str, ...] = ()) -> str:
    """The name, NFC-normalized and stripped; raises :class:`VoiceNameError` if unusable."""
    if not isinstance(name, str):
        raise VoiceNameError("a voice name must be text")
    clean = unicodedata.normalize("NFC", name).strip()
    if not clean:
        raise VoiceNameError("give the voice a name (1–40 letters, digits, spaces, - _ .)")
    if len(clean) > NAME_MAX:
        raise VoiceNameError(f"the voice name is {len(clean)} characters; use at most "
                             f"{NAME_MAX}")
    if not _NAME_RE.fullmatch(clean):
        raise VoiceNameError(f"the voice name {clean!r} has characters that are not allowed: "
                             "use letters, digits, spaces, '-', '_' and '.', starting with a "
                             "letter or digit")
    if clean.casefold() in {r.casefold() for r in reserved}:
        raise VoiceNameError(f"{clean!r} is a built-in voice; choose another name")
    return clean


def slug(name: str) -> str:
    """Folder name for ``name``: lowercase ASCII of it plus 8 hex digits of its hash."""
    ascii_part = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    ascii_part = re.sub(r"[^a-z0-9]+", "-", ascii_part.lower()).strip("-")[:24] or "voice"
    digest = hashlib.sha1(name.casefold().encode()).hexdigest()[:8]
    return f"{ascii_part}-{digest}"


class VoiceStore:
    """Save, list, rename and delete voices in one folder; safe across processes."""

    def __init__(self, root: str | os.PathLike, max_voices: int = 100,
                 reserved: tuple[str, ...] = ()) -> None:
        self.root = Path(root)
        self.max_voices = max(1, int(max_voices))
        self.reserved = tuple(reserved)

    @classmethod
    def for_settings(cls, settings: Any, reserved: tuple[str, ...] = ()) -> VoiceStore:
        return cls(settings.voices_dir, settings.max_saved_voices, reserved)

    # ---- reading ----------------------------------------------------------------------
    def list(self) -> list[SavedVoice]:
        """Every readable voice, sorted by name; a damaged folder is set aside."""
        if os.path.lexists(self.root) and not self.root.is_dir():
            ensure_dir(self.root, "the saved voices folder")
        voices = []
        for d in sorted(self.root.iterdir()) if self.root.is_dir() else []:
            if d.name.startswith(".") or is_set_aside(d) or not d.is_dir():
                continue
            voice = _read(d)
            if voice is not None:
                voices.append(voice)
        return sorted(voices, key=lambda v: v.name.casefold())

    def names(self) -> list[str]:
        return [v.name for v in self.list()]

    def find(self, name: str) -> SavedVoice | None:
        """The voice called ``name`` (any case), or None; never raises for odd names."""
        if not isinstance(name, str) or not name.strip():
            return None
        key = unicodedata.normalize("NFC", name).strip().casefold()
        direct = self.root / slug(unicodedata.normalize("NFC", name).strip())
        if direct.is_dir():
            voice = _read(direct)
            if voice is not None and voice.name.casefold() == key:
                return voice
        return next((v for v in self.list() if v.name.casefold() == key), None)

    def get(self, name: str) -> SavedVoice:
        voice = self.find(name)
        if voice is None:
            raise NotFoundError(f"no saved voice is called {name!r}; saved voices: "
                                f"{', '.join(self.names()) or 'none yet'}")
        return voice

    # ---- changing ---------------------------------------------------------------------
    def save(self, name: str, wav: np.ndarray, sr: int,
             voice: VoiceProfile | PromptVoice | dict, transcript: str = "",
             notes: list[str] | None = None, engine: str = OFFLINE) -> SavedVoice:
        """Store a validated prompt ``(T,)`` at ``sr`` and what ``engine`` measured of it
        under ``name``: the offline engine's profile (and with cloning v2 its place in
        Kokoro's voice space), or another engine's own form (a dict of tensors, voice.pt)."""
        name = check_name(name, self.reserved)
        transcript = _check_transcript(transcript)
        meta = {"name": name, "created": time.time(), "engine": engine,
                "transcript": transcript,
                "prompt": {"file": PROMPT_FILE, "sample_rate": int(sr),
                           "seconds": round(len(wav) / sr, 3), "notes": list(notes or [])}}
        if isinstance(voice, dict):
            own = voice

            def write(tmp: Path) -> None:
                import torch

                write_wav_atomic(tmp / PROMPT_FILE, wav, sr)
                torch.save(own, tmp / ENGINE_VOICE_FILE)
        else:
            profile = voice.profile if isinstance(voice, PromptVoice) else voice
            target = voice.target if isinstance(voice, PromptVoice) else None
            meta["profile"] = profile.to_dict()
            if target is not None:
                meta["space"] = target.to_dict()

            def write(tmp: Path) -> None:
                write_wav_atomic(tmp / PROMPT_FILE, wav, sr)
        self._add(name, meta, write)
        logger.info("saved voice %r (%.1f s prompt)", name, len(wav) / sr)
        return self.get(name)

    def save_blend(self, name: str, blend: Blend) -> SavedVoice:
        """Store a voice blend (checked by the caller against the engine's voices)."""
        name = check_name(name, self.reserved)
        self._add(name, {"name": name, "created": time.time(), "blend": blend.to_dict()})
        logger.info("saved voice blend %r (%s)", name, blend.spec)
        return self.get(name)

    def save_fitted(self, name: str, pack: np.ndarray, provenance: dict[str, Any],
                    engine: str = OFFLINE) -> SavedVoice:
        """Store a fitted style pack ``(510, 256)`` float32 and its provenance under
        ``name`` (checked as an import is: shape, dtype, finite, bounded)."""
        name = check_name(name, self.reserved)
        pack = check_pack(pack)
        meta = {"name": name, "created": time.time(), "engine": engine, "kind": FITTED,
                "fit": dict(provenance)}
        self._add(name, meta, lambda tmp: np.save(tmp / PACK_FILE, pack, allow_pickle=False))
        logger.info("saved fitted voice %r", name)
        return self.get(name)

    def add_files(self, name: str, meta: dict[str, Any], files: dict[str, bytes]
                  ) -> SavedVoice:
        """Store a voice given whole — ``meta`` (profile.json) and its files by plain name —
        as an imported voice file brings it (:mod:`cosyvoice.voice.transfer` checks both)."""
        name = check_name(name, self.reserved)

        def write(tmp: Path) -> None:
            for file_name, data in files.items():
                (tmp / Path(file_name).name).write_bytes(data)

        self._add(name, {**meta, "name": name}, write)
        logger.info("imported voice %r (%s)", name, meta.get("kind", "saved"))
        return self.get(name)

    def rename(self, old: str, new: str) -> SavedVoice:
        new = check_name(new, self.reserved)
        with self._locked():
            voice = self.get(old)
            clash = self.find(new)
            if clash is not None and clash.path != voice.path:
                raise ConflictError(f"a voice called {new!r} is already saved")
            meta = read_json(voice.path / PROFILE_FILE, WHAT, _check_meta, unit=voice.path,
                             required=True)
            if meta is None:
                raise NotFoundError(f"the saved voice {old!r} was damaged on disk and has "
                                    "been set aside (see /health/ready)")
            meta["name"] = new
            write_json_atomic(voice.path / PROFILE_FILE, meta)
            target = self.root / slug(new)
            if target != voice.path:
                os.rename(voice.path, target)
        logger.info("renamed saved voice %r → %r", voice.name, new)
        return self.get(new)

    def delete(self, name: str) -> str:
        """Remove the voice; returns the name it had."""
        with self._locked():
            voice = self.get(name)
            trash = self.root / f".trash-{voice.path.name}-{os.getpid()}"
            os.rename(voice.path, trash)
            shutil.rmtree(trash, ignore_errors=True)
        logger.info("deleted saved voice %r", voice.name)
        return voice.name

    def _add(self, name: str, meta: dict[str, Any], write=None) -> None:
        """Under the lock: write ``profile.json`` (and whatever ``write(folder)`` adds) into a
        hidden temp folder, then rename it into place — a reader never sees half a voice."""
        with self._locked():
            target = self._new_folder(name)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
            try:
                if write is not None:
                    write(tmp)
                write_json_atomic(tmp / PROFILE_FILE, meta)
                os.rename(tmp, target)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise

    def _new_folder(self, name: str) -> Path:
        """The folder a new voice ``name`` goes to (under the lock): refuses a taken name
        and a full store; sets aside an unreadable leftover of the same name."""
        if self.find(name) is not None:
            raise ConflictError(f"a voice called {name!r} is already saved; pick another "
                                "name or delete that one first")
        count = len(self.list())
        if count >= self.max_voices:
            raise ConflictError(f"{count} voices are saved, the most allowed "
                                f"(--max-saved-voices {self.max_voices}); delete one first")
        target = self.root / slug(name)
        if os.path.lexists(target):
            set_aside(target, WHAT, "an unreadable folder where the new voice goes")
        return target

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive lock on ``.lock``; also sweeps leftovers of interrupted changes."""
        ensure_dir(self.root, "the saved voices folder")
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            for stale in self.root.glob(".t*-*"):
                if stale.is_dir() and stale.name.startswith((".tmp-", ".trash-")):
                    shutil.rmtree(stale, ignore_errors=True)
            yield
        finally:
            os.close(fd)


def _read(folder: Path) -> SavedVoice | None:
    """The voice in ``folder``; None (and the folder set aside) when it is damaged."""
    return read_json(folder / PROFILE_FILE, WHAT, lambda meta: voice_in(folder, meta),
                     unit=folder, required=True)


def _check_meta(meta: Any) -> dict[str, Any]:
    if not isinstance(meta, dict):
        raise DamagedFile(f"{PROFILE_FILE} is not a JSON object")
    if not isinstance(meta.get("name"), str) or not meta["name"].strip():
        raise DamagedFile(f"{PROFILE_FILE} has no name")
    if isinstance(meta.get("created"), bool) or not isinstance(meta.get("created"),
                                                                int | float):
        raise DamagedFile(f"{PROFILE_FILE}: created is {meta.get('created')!r:.40}")
    return meta


def voice_in(folder: Path, meta: Any) -> SavedVoice:
    """The voice ``meta`` (profile.json's content) describes in ``folder``; DamagedFile (or
    another of the state files' damage errors) when it is not what the app writes."""
    meta = _check_meta(meta)
    engine = str(meta.get("engine", OFFLINE))
    if meta.get("kind") == FITTED:
        if not isinstance(meta.get("fit"), dict):
            raise DamagedFile(f"{PROFILE_FILE}: a fitted voice without its provenance")
        if not (folder / PACK_FILE).is_file():
            raise DamagedFile(f"{PACK_FILE} is missing")
        return SavedVoice(name=str(meta["name"]), path=folder, created=float(meta["created"]),
                          transcript="", prompt={}, profile=None, engine=engine,
                          fit=meta["fit"])
    if "blend" in meta and "profile" not in meta:
        return SavedVoice(name=str(meta["name"]), path=folder, created=float(meta["created"]),
                          transcript="", prompt={}, profile=None,
                          blend=Blend.from_weights(meta["blend"]["weights"]), engine=engine)
    if not (folder / PROMPT_FILE).is_file():
        raise DamagedFile(f"{PROMPT_FILE} is missing")
    if "profile" not in meta and not (folder / ENGINE_VOICE_FILE).is_file():
        raise DamagedFile(f"{ENGINE_VOICE_FILE} is missing")
    return SavedVoice(name=str(meta["name"]), path=folder, created=float(meta["created"]),
                      transcript=str(meta.get("transcript", "")), prompt=dict(meta["prompt"]),
                      profile=(VoiceProfile.from_dict(meta["profile"]) if "profile" in meta
                               else None),
                      clone=CloneTarget.from_dict(meta["space"]) if "space" in meta else None,
                      engine=engine)


def load_tensors(path: Path) -> dict[str, Any]:
    """``voice.pt``: a dict of tensors (weights only: no code runs)."""
    import torch

    data = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(data, dict) or not all(isinstance(v, torch.Tensor)
                                             for v in data.values()):
        raise DamagedFile(f"{ENGINE_VOICE_FILE} is not a dict of tensors")
    return data


def _finite(x: float, digits: int) -> float | None:
    return round(float(x), digits) if np.isfinite(x) else None


def save_from_prompt(store: VoiceStore, synth: Any, name: str, prompt_path: str | os.PathLike,
                     transcript: str = "") -> SavedVoice:
    """Validate the recording at ``prompt_path``, measure it with ``synth`` (a
    :class:`~cosyvoice.pipeline.Synthesizer`, the same analysis clone mode uses) and save.

    The cheap checks (name, transcript, a free name, room in the store) run first.
    """
    name = check_name(name, store.reserved)
    _check_transcript(transcript)
    if store.find(name) is not None:
        raise ConflictError(f"a voice called {name!r} is already saved; pick another name "
                            "or delete that one first")
    if len(store.list()) >= store.max_voices:
        raise ConflictError(f"the most saved voices ({store.max_voices}) are stored; delete "
                            "one first")
    prompt, voice = synth.prompt_profile(Path(prompt_path), transcript)
    return store.save(name, prompt.wav, prompt.sr, voice, transcript, prompt.notes,
                      engine=synth.capabilities.name)


def save_from_blend(store: VoiceStore, synth: Any, name: str, spec: str) -> SavedVoice:
    """Check ``spec`` (``af_bella:2+af_sky:1``) against the engine's blendable voices and
    save it under ``name``."""
    caps = synth.capabilities
    if not caps.saved_voices or not caps.blend_voices:
        raise TextError(f"the {caps.name} engine does not save voice blends")
    name = check_name(name, store.reserved)
    return store.save_blend(name, parse_blend(str(spec or ""), caps.blend_voices))


def _check_transcript(text: object) -> str:
    text = "" if text is None else str(text).strip()
    if len(text) > TRANSCRIPT_MAX:
        raise TextError(f"the transcript is {len(text)} characters; use at most "
                        f"{TRANSCRIPT_MAX}")
    return text

