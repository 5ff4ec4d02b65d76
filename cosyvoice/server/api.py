"""REST API (``/api/v1``) and the OpenAI-compatible speech endpoint (``/v1/audio/speech``).

Every error is JSON ``{"error": {"message", "type", "code"}}`` (see
:mod:`cosyvoice.server.errors`); 413 for oversized uploads, 422 for invalid fields, 429/503
with ``Retry-After`` when the server is busy or draining.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from cosyvoice.audio.encode import (
    check_format,
    encode,
    media_type,
    pcm16_bytes,
    streaming_wav_header,
)
from cosyvoice.engine.base import INSTRUCTION_MAX_CHARS, SEED_MAX
from cosyvoice.errors import (
    TextError,
)
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from cosyvoice.server.errors import (
    error_responses,
    read_form,
    read_json,
    validate_body,
)
from cosyvoice.server.transcribe_api import auto_transcript, transcript_header
from cosyvoice.server.uploads import discard_upload, save_upload

logger = logging.getLogger(__name__)

DEADLINE_POLL_S = 0.2
# OpenAI's voice names are accepted and spoken by the default voice, so clients written
# for OpenAI work unchanged; our own voice names pick that voice.
STREAMED_FORMATS = ("wav", "pcm16")  # chunked as they are synthesized (the others: whole)
OPENAI_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage",
                 "shimmer", "verse")


class TtsBody(BaseModel):
    """Fields of ``POST /api/v1/tts`` (JSON body, or multipart form fields + ``prompt`` file)."""

    text: str = Field(description="text to speak (limit: settings max_text_chars)")
    engine: str | None = Field(None, max_length=40, description="the engine that speaks "
                               "(GET /api/v1/engines lists them); empty = the default engine, "
                               "or the offline engine when the default failed to load")
    mode: str = Field("preset", max_length=40, description="one of the engine's modes "
                      "(GET /api/v1/engine lists them)")
    voice: str | None = Field(None, max_length=100, description="preset mode (and instruct "
                              "mode without a prompt): a bundled or saved voice name; empty = "
                              "the engine's default voice")
    instruction: str = Field("", max_length=INSTRUCTION_MAX_CHARS,
                             description="natural-language style, e.g. 'speak happily and a "
                             "bit faster' or '用四川话说'")
    prompt_text: str = Field("", max_length=500, description="prompt transcript (optional); "
                             "'auto': transcribe the prompt where the mode takes a transcript "
                             "(the text used comes back in X-Prompt-Transcript)")
    speed: float = Field(1.0, ge=0.5, le=2.0)
    seed: int | None = Field(None, ge=0, le=SEED_MAX)
    strength: float = Field(1.0, ge=0.0, le=1.0, description="cloning similarity strength")
    format: Literal["wav", "pcm16", "flac", "mp3", "opus"] = "wav"
    stream: bool = Field(False, description="send audio chunk by chunk as it is synthesized")
    timestamps: bool = Field(False, description="answer JSON: the audio (base64, in `format`) "
                             "with sentence cues (start/end seconds, text) and SRT/WebVTT "
                             "subtitles; not with `stream`")


class SpeechBody(BaseModel):
    """OpenAI ``POST /v1/audio/speech``."""

    model: str | None = Field(None, description="an engine id of /v1/models (cosyvoice2, "
                              "cosyvoice3, cosyvoice-offline) picks that engine; other names "
                              "(tts-1 ...) get the default engine")
    input: str
    voice: str = "alloy"
    response_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] = "mp3"
    speed: float = Field(1.0, ge=0.5, le=2.0)
    instructions: str | None = Field(None, max_length=INSTRUCTION_MAX_CHARS,
                                     description="style in words (emotion, speed, volume, "
                                     "pitch, dialect), as instruction")
    seed: int | None = Field(None, ge=0, le=2**31 - 1, description="our extension (the "
                             "openai client sends it with extra_body): same seed, same audio")
    stream_format: Literal["audio", "sse"] | None = Field(
        None, description="audio: pcm/wav sent in chunks as they are synthesized (an engine's "
        "token hops); left out: the whole file in one response, which a restart's drain "
        "answers with a retryable 503 if it cannot finish. sse is not supported")


class Api:
    """Route handlers bound to one Synthesizer and its admission gate."""

    def __init__(self, synth: Synthesizer, gate: SynthesisGate) -> None:
        self.synth = synth
        self.gate = gate
        self.max_upload = int(synth.settings.max_upload_mb * 2**20)

    # ---- request parsing ---------------------------------------------------------------
    async def parse_tts(self, request: Request) -> tuple[TtsBody, Path | None]:
        """JSON, or a multipart form with an optional ``prompt`` file (the body guard lets
        no other media type through, and no body over the route's limit)."""
        ctype = request.headers.get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            return validate_body(TtsBody, read_json(await request.body())), None
        form = await read_form(request, "send text fields and at most one file, 'prompt'",
                               max_part_size=self.max_upload)
        fields = {k: v for k, v in form.items() if not isinstance(v, UploadFile)}
        upload = form.get("prompt")
        body = validate_body(TtsBody, fields)
        prompt = await self.save_upload(upload) if isinstance(upload, UploadFile) else None
        return body, prompt

    async def save_upload(self, upload: UploadFile) -> Path:
        """The upload stored under ``cache/uploads`` (:func:`~cosyvoice.server.uploads.
        save_upload`), at most ``--max-upload-mb``."""
        return await save_upload(upload, Path(self.synth.settings.cache_dir), self.max_upload)

    # ---- synthesis ----------------------------------------------------------------------
    # The routes call these two; a subclass runs the same requests elsewhere (the Ray Serve
    # ingress sends them to a synthesis replica: cosyvoice/serving/ingress.py).
    async def run_full(self, req: SynthesisRequest, fmt: str,
                       timestamps: bool = False) -> Response:
        """The whole audio in ``fmt`` (see :meth:`full`), in a worker thread."""
        return await self.until_drain_deadline(self.full, req, fmt, timestamps)

    async def run_stream(self, req: SynthesisRequest, fmt: str) -> Response:
        """Chunked audio (see :meth:`streaming`)."""
        return await run_in_threadpool(self.streaming, req, fmt)

    async def until_drain_deadline(self, fn, *args) -> Response:
        """``fn(*args)`` in a worker thread; if the drain deadline passes first, answer a
        retryable 503 then (the process is about to exit, and the work with it) rather
        than let the connection drop without an answer."""
        tracker = self.gate.tracker
        task = asyncio.ensure_future(run_in_threadpool(fn, *args))
        while True:
            done, _ = await asyncio.wait({task}, timeout=DEADLINE_POLL_S)
            if done:
                return task.result()
            if tracker.past_drain_deadline():
                task.add_done_callback(lambda t: t.cancelled() or t.exception())
                raise tracker.draining_error()

    def full(self, req: SynthesisRequest, fmt: str, timestamps: bool = False) -> Response:
        with self.gate.slot(len(req.text)):
            result = self.synth.synthesize(req)
        data = encode(result.wav, result.sample_rate, fmt)
        headers = {"X-Audio-Duration": f"{result.duration_s:.3f}",
                   "X-Synthesis-Seconds": f"{result.elapsed_s:.3f}",
                   "X-Output-File": result.path.name}
        if result.notes:
            headers["X-CosyVoice-Notes"] = notes_header(result.notes)
        if timestamps:
            return JSONResponse(timed_body(result, data, fmt), headers=headers)
        return Response(data, media_type=media_type(fmt, result.sample_rate), headers=headers)

    def streaming(self, req: SynthesisRequest, fmt: str) -> StreamingResponse:
        """Chunked audio from :meth:`Synthesizer.stream`: a sentence, or a piece of one on an
        engine's token hops, as soon as it is joined. The first chunk is rendered before
        headers are sent, so a bad request still gets a proper 4xx/503 instead of a broken
        stream; the request's notes go in ``X-CosyVoice-Notes``."""
        view, _ = self.synth.route(req)
        if not view.capabilities.streaming:
            raise TextError(f"the {view.capabilities.name} engine does not stream; "
                            "send stream=false")
        if fmt not in STREAMED_FORMATS:
            raise TextError("stream=true supports format wav or pcm16")
        slot = self.gate.slot(len(req.text))
        slot.__enter__()
        try:
            chunks = self.synth.stream(req)
            first = next(chunks, None)
        except BaseException as e:
            slot.__exit__(type(e), e, e.__traceback__)
            raise
        sr = first.sample_rate if first is not None else view.sample_rate
        headers = ({"X-CosyVoice-Notes": notes_header(first.notes)}
                   if first is not None and first.notes else None)

        def body() -> Iterator[bytes]:
            try:
                if fmt == "wav":
                    yield streaming_wav_header(sr)
                if first is not None:
                    yield pcm16_bytes(first.wav)
                for chunk in chunks:
                    yield pcm16_bytes(chunk.wav)
            finally:
                chunks.close()
                slot.__exit__(None, None, None)

        return StreamingResponse(body(), media_type=media_type(fmt, sr), headers=headers)


def notes_header(notes: list[str]) -> str:
    """The result's notes for the ``X-CosyVoice-Notes`` header: joined by " | ", UTF-8
    percent-encoded (headers are Latin-1; the notes may be Chinese)."""
    from urllib.parse import quote

    return quote(" | ".join(notes), safe=" ,;:()/'+=-_.~|")


def _request(body: TtsBody, prompt: Path | None) -> SynthesisRequest:
    return SynthesisRequest(text=body.text, mode=body.mode, voice=body.voice,
                            prompt_path=str(prompt) if prompt else None,
                            prompt_text=body.prompt_text, speed=body.speed, seed=body.seed,
                            strength=body.strength, instruction=body.instruction,
                            engine=body.engine or None)


def _speech_voice(synth: Synthesizer, name: str) -> str | None:
    """Our voice (bundled, saved — saved names winning over OpenAI's — or a blend); an
    OpenAI voice name gives None: the engine's default for the text's language."""
    if name.lower() in OPENAI_VOICES and name not in synth.capabilities.voices and (
            synth.find_saved(name) is None):
        return None
    try:
        return synth.resolve_voice(name)[0]
    except TextError:
        raise TextError(f"unknown voice {name!r}; use one of "
                        f"{', '.join(synth.voice_names())}, a blend such as "
                        "af_bella:2+af_sky:1, or an OpenAI voice name") from None


def engine_id(synth: Synthesizer, name: str | None = None) -> str:
    """The model id the OpenAI surface lists for an engine: its name where it starts with
    ``cosyvoice`` (cosyvoice2, cosyvoice3), else ``cosyvoice-<engine>``."""
    name = name or synth.capabilities.name
    return name if name.startswith("cosyvoice") else f"cosyvoice-{name}"


def model_engine(synth: Synthesizer, model: str | None) -> str | None:
    """The engine an OpenAI ``model`` names (an id of :func:`engine_id` or an engine's own
    name); None for any other model name (tts-1 ...): the default engine."""
    for name in synth.engines:
        if model in (name, engine_id(synth, name)):
            return name
    return None


def timed_body(result, data: bytes, fmt: str) -> dict:
    """``timestamps: true``: the encoded audio as base64 with its sentence cues, their SRT
    and WebVTT forms, and word/syllable cues where the engine knows durations."""
    from cosyvoice.subtitles import to_srt, to_vtt

    return {"audio": base64.b64encode(data).decode("ascii"), "format": fmt,
            "sample_rate": result.sample_rate, "duration_s": round(result.duration_s, 3),
            "cues": [{"start": round(c.start_s, 3), "end": round(c.end_s, 3), "text": c.text}
                     for c in result.cues],
            "words": [{"start": round(c.start_s, 3), "end": round(c.end_s, 3), "text": c.text}
                      for c in result.word_cues],
            "srt": to_srt(result.cues), "vtt": to_vtt(result.cues), "notes": result.notes}


def tts_schema(synth: Synthesizer) -> dict:
    """TtsBody's JSON schema with ``mode`` limited to the engine's modes."""
    schema = TtsBody.model_json_schema()
    schema["properties"]["mode"]["enum"] = list(synth.capabilities.modes)
    return schema


def api_router(synth: Synthesizer, gate: SynthesisGate, api: Api | None = None) -> APIRouter:
    """The REST and OpenAI routes; ``api`` runs their syntheses (default: in this process)."""
    api = api or Api(synth, gate)
    router = APIRouter()

    @router.post("/api/v1/tts", tags=["tts"], response_class=Response,
                 responses=error_responses(413, 422, 429, 503, 507),
                 openapi_extra={"requestBody": {"content": {
                     "application/json": {"schema": tts_schema(synth)},
                     "multipart/form-data": {"schema": {"type": "object", "properties": {
                         **tts_schema(synth)["properties"],
                         "prompt": {"type": "string", "format": "binary"}}}}}}})
    async def tts(request: Request) -> Response:
        """Speak text in any mode; JSON, or multipart with a ``prompt`` recording
        (``prompt_text: "auto"`` transcribes it where the mode takes a transcript)."""

        body, prompt = await api.parse_tts(request)
        req = _request(body, prompt)
        fmt = check_format(body.format)
        try:
            if body.stream and body.timestamps:
                raise TextError("timestamps come with a whole response: leave out stream, or "
                                "read each chunk's timing as it arrives / 时间戳不能与流式同用")
            heard = await auto_transcript(synth, gate, req)
            if body.stream:
                response = await api.run_stream(req, fmt)
            else:
                response = await api.run_full(req, fmt, body.timestamps)
            return transcript_header(response, heard)
        finally:
            # Streaming too: the prompt is read before the first chunk is sent.
            if prompt is not None:
                discard_upload(prompt)

    @router.post("/v1/audio/speech", tags=["openai"], response_class=Response,
                 responses=error_responses(422, 429, 503))
    async def speech(body: SpeechBody) -> Response:
        """OpenAI-compatible: ``openai.audio.speech.create(model=..., voice=..., input=...)``.

        ``voice``: a bundled or saved voice name, else an OpenAI name (the default voice).
        ``response_format`` pcm and wav are streamed (chunked, as OpenAI's server sends them:
        a client's streaming response plays them as they come), from the engine's token hops
        where it has them; the other formats are encoded whole.
        """
        fmt = "pcm16" if body.response_format == "pcm" else body.response_format
        fmt = check_format(fmt)
        engine = model_engine(synth, body.model)
        view, _ = synth.route(SynthesisRequest(text="", engine=engine))
        voice = await run_in_threadpool(_speech_voice, view, body.voice)
        instruction = (body.instructions or "").strip()
        if instruction and not view.capabilities.instructions:
            raise TextError(f"the {view.capabilities.name} engine does not take "
                            "instructions; leave 'instructions' empty")
        req = SynthesisRequest(text=body.input, voice=voice, speed=body.speed,
                               mode="instruct" if instruction else "preset",
                               instruction=instruction, engine=engine, seed=body.seed)
        if body.stream_format == "sse":
            raise TextError("stream_format 'sse' is not supported; send 'audio' for chunked "
                            "pcm/wav, or leave it out for the whole file")
        if (body.stream_format == "audio" and fmt in STREAMED_FORMATS
                and view.capabilities.streaming):
            return await api.run_stream(req, fmt)
        return await api.run_full(req, fmt)

    @router.get("/v1/models", tags=["openai"])
    def models() -> dict:
        return {"object": "list", "data": [
            *({"id": engine_id(synth, name), "object": "model", "created": 0,
               "owned_by": "local"} for name in synth.engines),
            {"id": "tts-1", "object": "model", "created": 0, "owned_by": "local"}]}

    @router.get("/api/v1/engine", tags=["tts"], responses=error_responses(422))
    def engine(name: str | None = None) -> dict:
        """An engine's capabilities (``?name=``; default: the default engine): modes,
        languages, voices (saved ones too where it takes them), streaming, instructions,
        seed determinism, sample rate."""
        view = synth.using(name)
        return {**view.capabilities.to_dict(), "voices_saved": view.saved_voice_names()}

    @router.get("/api/v1/engines", tags=["tts"])
    def engines() -> dict:
        """Every served engine: state (READY, FAILED with its reason, UNLOADED ...), whether
        it is the default, and its capabilities."""
        return {"default": synth.default_engine, "engines": [
            {**state, "capabilities": synth.using(state["name"]).capabilities.to_dict()}
            for state in synth.engine_states()]}

    return router
