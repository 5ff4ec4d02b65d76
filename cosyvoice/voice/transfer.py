"""One file per saved voice, of any kind, to carry it to another install: export and import.

A voice file (``NAME.cvvoice``) is a zip archive of plain names only::

    voice.json   {"format": "cosyvoice-voice", "version": 1, "kind": "fitted" | "saved" |
                  "blend", "voice": profile.json's content (name, engine, provenance ...)}
    pack.npy     a fitted voice's style pack          (the files the voice has, no others)
    prompt.wav   a saved voice's prompt recording
    voice.pt     an engine's own form of a voice (CosyVoice: a dict of tensors)

An import is checked before anything is written to the voices folder: the file's size, that
it is a zip of at most these members (no folders, paths, duplicates or encryption; each
member's size bounded before it is read), the format and its version, the name (the file's
own or the one given, by the name rules), and each part as the store reads it — the pack
(shape, float32, finite, bounded; never unpickled), the recording (a 16-bit WAV of bounded
length), the tensors (weights only: no code runs) and profile.json's fields. A voice fitted
on one machine thus serves on another that has the same Kokoro voices.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from cosyvoice import bounded_json
from cosyvoice.errors import NotFoundError, TextError, UploadTooLargeError
from cosyvoice.state_files import DAMAGE_ERRORS, DamagedFile, read_json
from cosyvoice.voice.fitted import check_pack
from cosyvoice.voice.store import (
    ENGINE_VOICE_FILE,
    PACK_FILE,
    PROFILE_FILE,
    PROMPT_FILE,
    WHAT,
    SavedVoice,
    VoiceStore,
    check_name,
    load_tensors,
    voice_in,
)

FORMAT, VERSION = "cosyvoice-voice", 1
SUFFIX = ".cvvoice"
META_FILE = "voice.json"
MAX_FILE_BYTES = 16 * 2**20  # the whole voice file (a 30 s prompt at 48 kHz is 2.9 MB)
MEMBER_MAX = {META_FILE: 2**20, PACK_FILE: 2**20, PROMPT_FILE: 8 * 2**20,
              ENGINE_VOICE_FILE: 8 * 2**20}
PROMPT_MAX_S = 60.0
# profile.json keys an import keeps (anything else in a file is dropped)
META_KEYS = ("engine", "kind", "transcript", "prompt", "profile", "space", "blend", "fit")


class VoiceFileError(TextError):
    """A voice file that cannot be imported (says what is wrong with it)."""


def export_voice(voice: SavedVoice) -> bytes:
    """The voice file of a saved voice (built in memory: a voice is at most a few MB)."""
    meta = read_json(voice.path / PROFILE_FILE, WHAT, unit=voice.path, required=True)
    if not isinstance(meta, dict):
        raise NotFoundError(f"the saved voice {voice.name!r} was damaged on disk and has been "
                            "set aside (see /health/ready)")
    header = {"format": FORMAT, "version": VERSION, "kind": voice.kind, "voice": meta}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(META_FILE, json.dumps(header, ensure_ascii=False, indent=1))
        for name in (PACK_FILE, PROMPT_FILE, ENGINE_VOICE_FILE):
            if (voice.path / name).is_file():
                z.write(voice.path / name, name)
    return buf.getvalue()


def import_voice(store: VoiceStore, data: bytes, name: str | None = None) -> SavedVoice:
    """Check the voice file ``data`` and save its voice as ``name`` (default: the name it
    carries). VoiceFileError (422) naming what is wrong; UploadTooLargeError (413);
    ConflictError (409) for a name taken or a full store."""
    meta, files = read_voice_file(data)
    name = check_name(name if name else meta.get("name"), store.reserved)
    return store.add_files(name, {**meta, "name": name, "created": time.time()}, files)


def read_voice_file(data: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    """``(profile.json content, files by name)`` of a checked voice file."""
    if len(data) > MAX_FILE_BYTES:
        raise UploadTooLargeError(f"the voice file is {len(data):,} bytes; a voice file is at "
                                  f"most {MAX_FILE_BYTES // 2**20} MB")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = _members(z)
            parts = {m.filename: z.read(m) for m in members}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError) as e:
        raise VoiceFileError(f"not a voice file (a {SUFFIX} zip made by `voices export`): "
                             f"{e}") from None
    meta = _header(parts.pop(META_FILE, None))
    _check_parts(meta, parts)
    return meta, parts


def _members(z: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    infos = z.infolist()
    names = [i.filename for i in infos]
    if len(names) != len(set(names)):
        raise VoiceFileError("the voice file names a member twice")
    for info in infos:
        if info.filename not in MEMBER_MAX:
            raise VoiceFileError(f"the voice file holds {info.filename[:80]!r}; a voice file "
                                 f"holds only {', '.join(MEMBER_MAX)} (no folders or paths)")
        if info.flag_bits & 0x1:
            raise VoiceFileError("the voice file is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise VoiceFileError(f"{info.filename}: compression {info.compress_type} is not "
                                 "read here (stored or deflated only)")
        if info.file_size > MEMBER_MAX[info.filename]:
            raise VoiceFileError(f"{info.filename} is {info.file_size:,} bytes unpacked; at "
                                 f"most {MEMBER_MAX[info.filename]:,}")
    return infos


def _header(raw: bytes | None) -> dict[str, Any]:
    """voice.json → the voice's profile.json content, the known keys only."""
    if raw is None:
        raise VoiceFileError(f"the voice file has no {META_FILE}")
    try:
        header = bounded_json.loads(raw)
    except (ValueError, TypeError) as e:
        raise VoiceFileError(f"{META_FILE} is not JSON: {e}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise VoiceFileError(f"{META_FILE} does not describe a voice (format "
                             f"{FORMAT!r} expected)")
    if header.get("version") != VERSION:
        raise VoiceFileError(f"the voice file is format version {header.get('version')!r:.20}; "
                             f"this app reads version {VERSION}")
    voice = header.get("voice")
    if not isinstance(voice, dict):
        raise VoiceFileError(f"{META_FILE} has no voice description")
    meta = {k: voice[k] for k in META_KEYS if k in voice}
    meta["name"] = voice.get("name")
    if isinstance(meta.get("prompt"), dict):
        meta["prompt"] = {**meta["prompt"], "file": PROMPT_FILE}  # never a path from a file
    return meta


def _check_parts(meta: dict[str, Any], parts: dict[str, bytes]) -> None:
    """Each file as the store reads it, then profile.json's fields (:func:`voice_in`), in
    a private temporary folder."""
    if PROMPT_FILE in parts:
        _check_wav(parts[PROMPT_FILE])
    with tempfile.TemporaryDirectory(prefix="voice-import-") as tmp:
        folder = Path(tmp)
        for name, data in parts.items():
            (folder / name).write_bytes(data)
        try:
            if PACK_FILE in parts:
                check_pack(np.load(folder / PACK_FILE, allow_pickle=False))
            if ENGINE_VOICE_FILE in parts:
                load_tensors(folder / ENGINE_VOICE_FILE)
            voice = voice_in(folder, {**meta, "name": meta.get("name") or "x",
                                      "created": time.time()})
        except DAMAGE_ERRORS as e:
            raise VoiceFileError(f"the voice in the file is damaged: {_reason(e)}") from None
    expected = {"fitted": {PACK_FILE}, "blend": set()}.get(voice.kind, {PROMPT_FILE}) \
        | ({ENGINE_VOICE_FILE} if voice.kind == "saved" and voice.profile is None else set())
    extra = sorted(set(parts) - expected)
    if extra:
        raise VoiceFileError(f"a {voice.kind} voice's file holds no {', '.join(extra)}")


def _check_wav(data: bytes) -> None:
    try:
        info = sf.info(io.BytesIO(data))
    except (RuntimeError, sf.LibsndfileError) as e:
        raise VoiceFileError(f"{PROMPT_FILE} is not audio: {e}") from None
    if info.format != "WAV" or info.channels != 1:
        raise VoiceFileError(f"{PROMPT_FILE} must be a mono WAV file (it is {info.format}, "
                             f"{info.channels} channels)")
    if not 0 < info.duration <= PROMPT_MAX_S or not 8000 <= info.samplerate <= 48000:
        raise VoiceFileError(f"{PROMPT_FILE} is {info.duration:.1f} s at {info.samplerate} Hz; "
                             f"a saved prompt is at most {PROMPT_MAX_S:g} s at 8–48 kHz")


def _reason(e: BaseException) -> str:
    if isinstance(e, DamagedFile):
        return str(e)
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__

