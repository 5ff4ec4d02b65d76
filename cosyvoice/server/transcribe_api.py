"""Prompt transcription over REST: ``POST /api/v1/transcribe`` (multipart: the recording as
``audio``, optional ``language``) → ``{"text", "language", "seconds", ...}``; and the tts
route's ``prompt_text: "auto"`` (:func:`auto_transcript`). Errors use the API's JSON shape:
422 for a prompt the checks refuse or a language no installed recognizer knows, 503 when
no recognizer is installed, 429 when busy (transcription shares the synthesis gate)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from cosyvoice.asr.service import transcribe_file
from cosyvoice.asr.transcriber import Transcript
from cosyvoice.errors import PromptError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from cosyvoice.server.errors import error_responses, read_form
from cosyvoice.server.uploads import discard_upload, save_upload

AUTO = "auto"
_FORM = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["audio"], "properties": {
        "audio": {"type": "string", "format": "binary",
                  "description": "3–30 s of speech (wav, flac, ogg, mp3)"},
        "language": {"type": "string", "default": AUTO, "example": "zh",
                     "description": "auto (detect), or a code such as en, zh"}}}}}}}


def transcribe_path(synth: Synthesizer, gate: SynthesisGate, path: Path,
                    language: str | None) -> Transcript:
    """Transcribe under the synthesis gate (it is CPU work of the same size)."""
    with gate.slot(), synth.tracker.track("transcribe"):
        return transcribe_file(synth.manager, path, language, synth.limits)


async def auto_transcript(synth: Synthesizer, gate: SynthesisGate, req: SynthesisRequest
                          ) -> Transcript | None:
    """``prompt_text: "auto"``: where the request's engine and mode take a transcript, the
    prompt is transcribed and the text used; elsewhere "auto" means no transcript."""
    if req.prompt_text.strip().lower() != AUTO:
        return None
    req.prompt_text = ""
    if not req.prompt_path:
        return None
    view, _ = synth.route(req)
    if req.mode not in view.capabilities.transcript_modes:
        return None
    out = await run_in_threadpool(transcribe_path, synth, gate, Path(req.prompt_path), None)
    req.prompt_text = out.text
    return out


def transcript_header(response: Response, heard: Transcript | None) -> Response:
    """Tell the client what ``"auto"`` heard: ``X-Prompt-Transcript`` (UTF-8
    percent-encoded, as ``X-CosyVoice-Notes``)."""
    if heard is not None:
        response.headers["X-Prompt-Transcript"] = quote(heard.text, safe=" ,;:()/'+=-_.~")
    return response


def transcribe_router(synth: Synthesizer, gate: SynthesisGate) -> APIRouter:
    router = APIRouter()
    max_upload = int(synth.settings.max_upload_mb * 2**20)

    @router.post("/api/v1/transcribe", tags=["tts"], openapi_extra=_FORM,
                 responses=error_responses(400, 413, 422, 429, 503, 507))
    async def transcribe(request: Request) -> dict:
        """What a prompt recording says, for the transcript box of clone mode: ``text``,
        ``language`` (detected or as asked), ``seconds`` (the time it took), the
        ``recognizer`` and ``audio_s`` (the speech it heard)."""
        form = await read_form(request, "send the file 'audio' and, optionally, 'language' "
                               "(auto, en, zh, ...)", max_fields=3,
                               max_part_size=max_upload)
        upload, language = form.get("audio"), form.get("language")
        if not isinstance(upload, UploadFile):
            raise PromptError("attach the recording as the multipart file 'audio'")
        path = await save_upload(upload, Path(synth.settings.cache_dir), max_upload)
        try:
            out = await run_in_threadpool(transcribe_path, synth, gate, path,
                                          language if isinstance(language, str) else None)
        finally:
            discard_upload(path)
        return out.to_dict()

    return router
