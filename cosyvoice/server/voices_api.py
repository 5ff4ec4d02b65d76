"""Saved voices over REST: ``GET/POST /api/v1/voices``, ``GET/PATCH/DELETE
/api/v1/voices/{name}``, ``POST /api/v1/voices/fit``, ``GET /api/v1/voices/{name}/export``,
``POST /api/v1/voices/import``.

A POST takes multipart form fields ``name`` and ``transcript`` (optional) and a ``prompt``
recording; the prompt is validated and measured exactly as in clone mode (under the
synthesis gate: 429 when busy), then kept in the :class:`~cosyvoice.voice.store.VoiceStore`.
A JSON POST ``{"name", "blend": "af_bella:2+af_sky:1"}`` saves a voice blend. ``/fit`` takes
``name``, ``prompt`` and optional ``budget`` (seconds) and ``lang`` (``en``/``zh``), validates
the prompt the same way and answers 202 with a background job (``/api/v1/jobs/{id}``) that
saves a voice of kind ``fitted`` when done. Export gives one file per voice, import takes one
(:mod:`cosyvoice.voice.transfer`). Errors use the API's JSON shape (see
:mod:`cosyvoice.server.api`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from cosyvoice.audio.io import storage_error
from cosyvoice.errors import ConflictError, PromptError, TextError, UploadTooLargeError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.longform.fit_job import ENGINE as FIT_ENGINE
from cosyvoice.longform.fit_job import LANGS, MIN_BUDGET_S, check_fit_request
from cosyvoice.longform.runner import JobRunner
from cosyvoice.pipeline import Synthesizer
from cosyvoice.server.api import Api
from cosyvoice.server.errors import error_responses, read_form, read_json
from cosyvoice.server.uploads import discard_upload
from cosyvoice.voice.store import (
    NAME_MAX,
    TRANSCRIPT_MAX,
    SavedVoice,
    VoiceNameError,
    save_from_blend,
    save_from_prompt,
    slug,
)
from cosyvoice.voice.transfer import MAX_FILE_BYTES, SUFFIX, export_voice, import_voice


class VoiceRename(BaseModel):
    """``PATCH /api/v1/voices/{name}``: the new name."""

    name: str = Field(min_length=1, max_length=NAME_MAX,
                      description=f"new name: 1–{NAME_MAX} letters, digits, spaces, - _ .")


def _presets(synth: Synthesizer) -> list[dict[str, Any]]:
    return [{"name": k, "description": d, "kind": "preset"} for k, d in
            synth.capabilities.voices.items()]


def _builtin(synth: Synthesizer, name: str) -> bool:
    return name.strip().casefold() in {k.casefold() for k in synth.capabilities.voices}


def _summary(voice: SavedVoice) -> dict[str, Any]:
    return voice.summary()


BLEND_SCHEMA = {"schema": {"type": "object", "required": ["name", "blend"], "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": NAME_MAX},
    "blend": {"type": "string", "maxLength": 200, "example": "af_bella:2+af_sky:1",
              "description": "voice:weight pairs joined by '+' (the engine's blend_voices)"}}}}
_MULTIPART = {"requestBody": {"required": True, "content": {
    "application/json": BLEND_SCHEMA, "multipart/form-data": {"schema": {
    "type": "object", "required": ["name", "prompt"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": NAME_MAX,
                 "description": f"1–{NAME_MAX} letters, digits, spaces, - _ ."},
        "transcript": {"type": "string", "maxLength": TRANSCRIPT_MAX,
                       "description": "what the prompt says (optional)"},
        "prompt": {"type": "string", "format": "binary",
                   "description": "3–30 s of one person speaking (wav, flac, ogg, mp3)"}}}}}}}


def _fit_body(budget_max: float) -> dict:
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
        "type": "object", "required": ["name", "prompt"], "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": NAME_MAX},
            "prompt": {"type": "string", "format": "binary",
                       "description": "3–30 s of one person speaking (wav, flac, ogg, mp3)"},
            "budget": {"type": "number", "minimum": MIN_BUDGET_S, "maximum": budget_max,
                       "description": "wall-time budget in seconds (default --fit-budget-s)"},
            "lang": {"type": "string", "enum": list(LANGS), "default": "en",
                     "description": "the language the fit scores its candidates in"}}}}}}}


_IMPORT_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {
    "schema": {"type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "format": "binary",
                 "description": f"a voice file ({SUFFIX}) from GET /api/v1/voices/NAME/export"},
        "name": {"type": "string", "maxLength": NAME_MAX,
                 "description": "save it under this name (default: the file's)"}}}}}}}


def voices_router(synth: Synthesizer, gate: SynthesisGate,
                  runner: JobRunner | None = None) -> APIRouter:
    """The voices routes; ``runner``: the app's job runner, which fits voices (the Ray
    ingress has none: there ``/fit`` answers 409, and fitted voices are imported)."""
    api = Api(synth, gate)
    store = synth.voices
    router = APIRouter(prefix="/api/v1/voices", tags=["voices"])

    @router.get("")
    def list_voices() -> dict:
        """Bundled voices and every saved one (use either name as ``voice``)."""
        return {"voices": [*_presets(synth), *(_summary(v) for v in store.list())],
                "max_saved": store.max_voices}

    @router.post("", status_code=201, openapi_extra=_MULTIPART,
                 responses=error_responses(409, 413, 422, 429, 503, 507))
    async def add_voice(request: Request) -> dict:
        """Save the voice of a prompt recording (multipart) or a voice blend (JSON) under a
        name."""
        # The body guard lets only JSON (a blend) and multipart forms (a prompt) through.
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            return _summary(await _save_blend(synth, request))
        form = await read_form(request, "send only the fields 'name', 'transcript' and the "
                               "file 'prompt'", max_fields=5, max_part_size=64 * 1024)
        upload = form.get("prompt")
        if not isinstance(upload, UploadFile):
            raise PromptError("attach the prompt recording as the multipart file 'prompt'")
        name, transcript = form.get("name"), form.get("transcript") or ""
        if not isinstance(name, str):
            raise VoiceNameError("give the voice a name in the form field 'name'")
        engine = form.get("engine")  # the engine that measures it and alone offers it
        view = synth.using(engine if isinstance(engine, str) and engine else None)
        path = await api.save_upload(upload)
        try:
            voice = await run_in_threadpool(_save, view, gate, name, path, str(transcript))
        finally:
            discard_upload(path)
        return _summary(voice)

    @router.post("/fit", status_code=202, openapi_extra=_fit_body(synth.settings.fit_max_budget_s),
                 responses=error_responses(409, 413, 422, 429, 503))
    async def fit_voice(request: Request) -> JSONResponse:
        """Fit a voice to a prompt recording in the background: 202 with the job (progress
        and ETA at GET /api/v1/jobs/ID; DELETE cancels); the voice of kind ``fitted`` is
        saved under ``name`` when it is done."""
        if runner is None:
            raise ConflictError("voices are fitted by the single-process app; import the "
                                "fitted voice here (POST /api/v1/voices/import)")
        form = await read_form(request, "send the fields 'name', 'budget', 'lang' and the "
                               "file 'prompt'", max_fields=6, max_part_size=64 * 1024)
        upload, name = form.get("prompt"), form.get("name")
        if not isinstance(upload, UploadFile):
            raise PromptError("attach the prompt recording as the multipart file 'prompt'")
        if not isinstance(name, str):
            raise VoiceNameError("give the voice a name in the form field 'name'")
        budget, lang = _budget_field(form.get("budget")), form.get("lang") or "en"
        if not isinstance(lang, str):
            raise TextError(f"lang must be one of {', '.join(LANGS)}")
        path = await api.save_upload(upload)
        try:
            job = await run_in_threadpool(_submit_fit, runner, gate, name, path, budget, lang)
        finally:
            discard_upload(path)
        return JSONResponse(job, status_code=202)

    @router.post("/import", status_code=201, openapi_extra=_IMPORT_BODY,
                 responses=error_responses(409, 413, 422))
    async def import_voice_file(request: Request) -> dict:
        """Save the voice of a voice file (any kind) exported by another install."""
        form = await read_form(request, "send the file 'file' and optionally 'name'",
                               max_fields=3, max_part_size=64 * 1024)
        upload, name = form.get("file"), form.get("name")
        if not isinstance(upload, UploadFile):
            raise TextError(f"attach the voice file ({SUFFIX}) as the multipart file 'file'")
        if name is not None and not isinstance(name, str):
            raise VoiceNameError("the field 'name' must be text")
        data = await upload.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise UploadTooLargeError(f"a voice file is at most {MAX_FILE_BYTES // 2**20} MB")
        try:
            voice = await run_in_threadpool(import_voice, store, data, name or None)
        except OSError as e:
            raise storage_error(e, store.root, "the voice") from e
        return _summary(voice)

    @router.get("/{name}/export", response_class=Response, responses=error_responses(404, 422))
    def export(name: str) -> Response:
        """One file holding a saved voice (any kind), for POST /api/v1/voices/import."""
        _refuse_builtin(synth, name, "exported (it ships with every install)")
        voice = store.get(name)
        return Response(export_voice(voice), media_type="application/zip", headers={
            "Content-Disposition": f'attachment; filename="{slug(voice.name)}{SUFFIX}"'})

    @router.get("/{name}", responses=error_responses(404))
    def get_voice(name: str) -> dict:
        """One voice: its description, or the measured profile of a saved one."""
        if _builtin(synth, name):
            return next(p for p in _presets(synth) if p["name"].casefold() == name.casefold())
        return _summary(store.get(name))

    @router.patch("/{name}", responses=error_responses(404, 409, 422))
    def rename_voice(name: str, body: VoiceRename) -> dict:
        """Rename a saved voice."""
        _refuse_builtin(synth, name, "renamed")
        return _summary(store.rename(name, body.name))

    @router.delete("/{name}", responses=error_responses(404, 422))
    def delete_voice(name: str) -> dict:
        """Delete a saved voice and its prompt recording."""
        _refuse_builtin(synth, name, "deleted")
        return {"deleted": store.delete(name)}

    return router


def _refuse_builtin(synth: Synthesizer, name: str, what: str) -> None:
    if _builtin(synth, name):
        raise VoiceNameError(f"{name!r} is a built-in voice; it cannot be {what}")


async def _save_blend(synth: Synthesizer, request: Request) -> SavedVoice:
    body = read_json(await request.body())
    if not isinstance(body, dict) or not isinstance(body.get("blend"), str):
        raise TextError("to save a voice blend send JSON {\"name\": ..., \"blend\": "
                        "\"af_bella:2+af_sky:1\"}; to save a prompt's voice send "
                        "multipart/form-data with 'name' and a 'prompt' recording")
    try:
        return await run_in_threadpool(save_from_blend, synth.voices, synth, body.get("name"),
                                       body["blend"])
    except OSError as e:
        raise storage_error(e, synth.voices.root, "the voice") from e


def _budget_field(value: object) -> float | None:
    """The form's ``budget`` (seconds), None when absent; its range is checked with the fit."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        if not isinstance(value, str) or len(value) > 20:
            raise ValueError
        return float(value)
    except ValueError:
        raise TextError("budget must be a number of seconds (a form field)") from None


def _submit_fit(runner: JobRunner, gate: SynthesisGate, name: str, path, budget, lang: str
                ) -> dict:
    """Validate the prompt as clone mode does (two voices refused), under the gate, then
    queue the fit."""
    view = runner.synth.using(FIT_ENGINE)
    check_fit_request(view, runner.store, name, budget, lang)  # the cheap checks first
    with gate.slot(), view.tracker.track("fit_voice"):
        prompt = view.validate_prompt(path)
    return runner.submit_fit(name, prompt, budget, lang)


def _save(synth: Synthesizer, gate: SynthesisGate, name: str, path, transcript: str
          ) -> SavedVoice:
    with gate.slot(), synth.tracker.track("save_voice"):
        try:
            return save_from_prompt(synth.voices, synth, name, path, transcript)
        except OSError as e:  # a full or read-only voices dir: 507 with the reason
            raise storage_error(e, synth.voices.root, "the voice") from e
