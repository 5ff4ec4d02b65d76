"""REST API (``/api/v1``) and the OpenAI-compatible speech endpoint (``/v1/audio/speech``).

Every error is JSON ``{"error": {"message", "type", "code"}}`` (OpenAI's shape, so its
client shows the message); 413 for oversized uploads, 422 for invalid fields, 429/503
with ``Retry-After`` when the server is busy or draining.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from cosyvoice.audio.encode import (
    check_format,
    encode,
    media_type,
    pcm16_bytes,
    streaming_wav_header,
)
from cosyvoice.audio.io import storage_error
from cosyvoice.engine.base import SEED_MAX
from cosyvoice.errors import (
    BodyError,
    BusyError,
    CosyVoiceError,
    StorageError,
    TextError,
    UploadTooLargeError,
    error_body,
)
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from cosyvoice.server.gate import SynthesisGate

logger = logging.getLogger(__name__)

DEADLINE_POLL_S = 0.2
STORAGE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES)
# OpenAI's voice names are accepted and spoken by the default voice, so clients written
# for OpenAI work unchanged; our own voice names pick that voice.
OPENAI_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage",
                 "shimmer", "verse")


class ErrorDetail(BaseModel):
    message: str = Field(description="what is wrong and what to do")
    type: str = Field(description="error class, e.g. TextError, QueueFullError")
    code: int = Field(description="the HTTP status")


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer of this API (OpenAI's error shape)."""

    error: ErrorDetail


_ERROR_TEXT = {
    400: "the body cannot be parsed (not JSON, nested too deeply, broken multipart)",
    403: "the admin token is missing or wrong",
    404: "no such voice or model", 409: "name taken, or the voice store is full",
    413: "upload over --max-upload-mb", 422: "an invalid field (the message names it)",
    429: "busy: every slot and queue place taken; retry after Retry-After seconds",
    503: "draining, or a model is unavailable; retry after Retry-After seconds",
    507: "no disk space left to save the audio or the upload",
}


def use_error_body_in_schema(app: FastAPI) -> None:
    """Document every 4xx/5xx of the OpenAPI schema as ErrorBody, FastAPI's automatic
    422 (HTTPValidationError) included: the answers are that shape."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        ref = {"$ref": "#/components/schemas/ErrorBody"}
        for item in schema.get("paths", {}).values():
            for op in item.values():
                for code, resp in op.get("responses", {}).items():
                    if code.isdigit() and int(code) >= 400:
                        resp["content"] = {"application/json": {"schema": ref}}
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update({k: v for k, v in _error_schemas().items() if k not in components})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _error_schemas() -> dict:
    from pydantic.json_schema import models_json_schema

    _, defs = models_json_schema([(ErrorBody, "validation")],
                                 ref_template="#/components/schemas/{model}")
    return defs["$defs"]


def error_responses(*codes: int) -> dict[int | str, dict]:
    """OpenAPI ``responses`` for the error statuses a route can answer."""
    return {c: {"model": ErrorBody, "description": _ERROR_TEXT[c]} for c in codes}


class TtsBody(BaseModel):
    """Fields of ``POST /api/v1/tts`` (JSON body, or multipart form fields + ``prompt`` file)."""

    text: str = Field(description="text to speak (limit: settings max_text_chars)")
    mode: str = Field("preset", max_length=40, description="one of the engine's modes "
                      "(GET /api/v1/engine lists them)")
    voice: str | None = Field(None, max_length=100, description="preset mode (and instruct "
                              "mode without a prompt): a bundled or saved voice name; empty = "
                              "the engine's default voice")
    instruction: str = Field("", max_length=1000, description="natural-language style, e.g. "
                             "'speak happily and a bit faster' or '用四川话说'")
    prompt_text: str = Field("", max_length=500, description="prompt transcript (optional)")
    speed: float = Field(1.0, ge=0.5, le=2.0)
    seed: int | None = Field(None, ge=0, le=SEED_MAX)
    strength: float = Field(1.0, ge=0.0, le=1.0, description="cloning similarity strength")
    format: Literal["wav", "pcm16", "flac", "mp3", "opus"] = "wav"
    stream: bool = Field(False, description="send audio chunk by chunk as it is synthesized")


class SpeechBody(BaseModel):
    """OpenAI ``POST /v1/audio/speech``."""

    model: str | None = Field(None, description="ignored beyond the listing of /v1/models: "
                              "the app serves one engine")
    input: str
    voice: str = "alloy"
    response_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] = "mp3"
    speed: float = Field(1.0, ge=0.5, le=2.0)
    instructions: str | None = Field(None, max_length=1000, description="style in words "
                                     "(emotion, speed, volume, pitch, dialect), as instruction")


def error_response(status: int, message: str, kind: str,
                   retry_after_s: int | None = None) -> JSONResponse:
    """The one error answer of every route: :func:`error_body`, and ``Retry-After`` (the
    number its message says) when retrying later will work."""
    headers = {"Retry-After": str(retry_after_s)} if retry_after_s else None
    return JSONResponse(error_body(status, message, kind), status_code=status,
                        headers=headers)


def cosy_error_response(exc: CosyVoiceError) -> JSONResponse:
    retry = exc.retry_after_s if isinstance(exc, BusyError) else None
    return error_response(exc.http_status, str(exc), type(exc).__name__, retry)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(CosyVoiceError)
    async def _cosy(request: Request, exc: CosyVoiceError) -> JSONResponse:
        """A refusal the user can act on: one INFO line, no traceback."""
        logger.info("%s %s refused %d (%s): %s", request.method, request.url.path,
                    exc.http_status, type(exc).__name__, exc)
        return cosy_error_response(exc)

    @app.exception_handler(OSError)
    async def _os(request: Request, exc: OSError) -> JSONResponse:
        """A write that the disk refused (full, read-only, no permission) anywhere in a
        route: 507 with what to do; any other OSError is a bug, logged and answered 500."""
        if exc.errno in STORAGE_ERRNOS:
            where = Path(exc.filename).parent if exc.filename else Path("the data folder")
            return error_response(507, str(storage_error(exc, where)), "StorageError")
        logger.error("unexpected %s on %s", type(exc).__name__, request.url.path,
                     exc_info=exc)
        return error_response(500, f"internal error ({type(exc).__name__}); see the app log",
                      type(exc).__name__)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:10]:
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where or 'body'}: {err.get('msg', 'invalid')}")
        message = "invalid request: " + "; ".join(parts)
        logger.info("%s %s refused 422: %s", request.method, request.url.path, message)
        return error_response(422, message, "ValidationError")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        """Starlette's and FastAPI's own refusals (no such route, wrong method, a body
        FastAPI could not parse), in the same shape."""
        kind = _HTTP_KINDS.get(exc.status_code, "HTTPError")
        message = str(exc.detail)
        logger.info("%s %s refused %d: %s", request.method, request.url.path,
                    exc.status_code, message)
        if exc.status_code == 400:
            message += ("; send a JSON object (UTF-8, nested at most a few levels) or a "
                        "well-formed multipart form")
        return JSONResponse(error_body(exc.status_code, message, kind),
                            status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _fault(request: Request, exc: Exception) -> JSONResponse:
        """A bug: logged with its traceback, answered 500 in the same shape."""
        logger.error("unexpected %s on %s", type(exc).__name__, request.url.path,
                     exc_info=exc)
        return error_response(500, f"internal error ({type(exc).__name__}); see the app log",
                              "InternalError")


_HTTP_KINDS = {400: "BodyError", 404: "NotFoundError", 405: "MethodNotAllowed",
               413: "UploadTooLargeError"}


def read_json(raw: bytes) -> object:
    """Parse a JSON body; anything unparsable (including nesting deep enough to hit
    Python's recursion limit) is a :class:`BodyError` (400)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise BodyError("the JSON body is nested too deeply; send a flat JSON object") \
            from None
    except ValueError as e:  # JSONDecodeError, and UnicodeDecodeError for non-UTF-8
        raise BodyError(f"the body is not valid JSON ({e}); send a JSON object, or "
                        "multipart/form-data with a 'prompt' file") from None


class Api:
    """Route handlers bound to one Synthesizer and its admission gate."""

    def __init__(self, synth: Synthesizer, gate: SynthesisGate) -> None:
        self.synth = synth
        self.gate = gate
        self.max_upload = int(synth.settings.max_upload_mb * 2**20)

    # ---- request parsing ---------------------------------------------------------------
    async def parse_tts(self, request: Request) -> tuple[TtsBody, Path | None]:
        ctype = request.headers.get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            self.check_length(request)
            return validate_body(TtsBody, read_json(await request.body())), None
        self.check_length(request)
        try:
            form = await request.form(max_files=1, max_fields=20,
                                      max_part_size=self.max_upload)
        except HTTPException as e:  # starlette's malformed / too many parts
            raise BodyError(f"invalid multipart form: {e.detail}; send text fields and at "
                            "most one file, 'prompt'") from None
        fields = {k: v for k, v in form.items() if not isinstance(v, UploadFile)}
        upload = form.get("prompt")
        body = validate_body(TtsBody, fields)
        prompt = await self.save_upload(upload) if isinstance(upload, UploadFile) else None
        return body, prompt

    def check_length(self, request: Request) -> None:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > self.max_upload + 64 * 1024:
            raise UploadTooLargeError(f"upload is {int(length) / 2**20:.1f} MB; the limit is "
                                      f"{self.max_upload / 2**20:.0f} MB")

    async def save_upload(self, upload: UploadFile) -> Path:
        """Store an upload as ``cache/uploads/<private dir>/<its own safe name>``, so that
        messages about the file name what the user sent; remove it with :func:`discard_upload`.
        A client's path (``../../etc/passwd.wav``) is cut to its last part."""
        cache = Path(self.synth.settings.cache_dir) / "uploads"
        try:
            cache.mkdir(parents=True, exist_ok=True)
            path = Path(tempfile.mkdtemp(prefix="prompt-", dir=cache)) / safe_upload_name(
                upload.filename)
        except OSError as e:
            raise StorageError(f"could not store the upload in {cache}: "
                               f"{e.strerror or e} — free some disk space") from e
        size = 0
        try:
            with open(path, "xb") as f:
                while chunk := await upload.read(1 << 20):
                    size += len(chunk)
                    if size > self.max_upload:
                        raise UploadTooLargeError(f"prompt upload is over the "
                                                  f"{self.max_upload / 2**20:.0f} MB limit")
                    f.write(chunk)
        except BaseException as e:
            discard_upload(path)
            if isinstance(e, OSError):
                raise StorageError(f"could not store the upload in {cache}: "
                                   f"{e.strerror or e} — free some disk space") from e
            raise
        return path

    # ---- synthesis ----------------------------------------------------------------------
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

    def full(self, req: SynthesisRequest, fmt: str) -> Response:
        with self.gate.slot():
            result = self.synth.synthesize(req)
        data = encode(result.wav, result.sample_rate, fmt)
        headers = {"X-Audio-Duration": f"{result.duration_s:.3f}",
                   "X-Synthesis-Seconds": f"{result.elapsed_s:.3f}",
                   "X-Output-File": result.path.name}
        if result.notes:
            headers["X-CosyVoice-Notes"] = notes_header(result.notes)
        return Response(data, media_type=media_type(fmt, result.sample_rate), headers=headers)

    def streaming(self, req: SynthesisRequest, fmt: str) -> StreamingResponse:
        """Chunked audio; the first sentence is rendered before headers are sent, so a bad
        request still gets a proper 4xx instead of a broken stream."""
        if not self.synth.capabilities.streaming:
            raise TextError(f"the {self.synth.capabilities.name} engine does not stream; "
                            "send stream=false")
        if fmt not in ("wav", "pcm16"):
            raise TextError("stream=true supports format wav or pcm16")
        slot = self.gate.slot()
        slot.__enter__()
        try:
            chunks = self.synth.stream(req)
            first = next(chunks, None)
        except BaseException as e:
            slot.__exit__(type(e), e, e.__traceback__)
            raise
        sr = first.sample_rate if first is not None else self.synth.sample_rate

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

        return StreamingResponse(body(), media_type=media_type(fmt, sr))


def safe_upload_name(filename: str | None) -> str:
    """The last part of a client's file name, in letters, digits, ``.``, ``-``, ``_``."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = re.sub(r"[^\w.-]+", "_", base).lstrip(".")[-80:]
    return base or "prompt.bin"


def discard_upload(path: Path) -> None:
    """Delete an upload stored by :meth:`Api.save_upload` and its private folder."""
    path.unlink(missing_ok=True)
    if path.parent.name.startswith("prompt-"):
        try:
            path.parent.rmdir()
        except OSError:
            pass


def notes_header(notes: list[str]) -> str:
    """The result's notes for the ``X-CosyVoice-Notes`` header: joined by " | ", UTF-8
    percent-encoded (headers are Latin-1; the notes may be Chinese)."""
    from urllib.parse import quote

    return quote(" | ".join(notes), safe=" ,;:()/'+=-_.~|")


async def json_object_or_empty(request: Request) -> None:
    """Dependency of the routes that take no body: an empty one, or a JSON object (its
    fields are ignored). Anything else is refused (400/422) before the route acts."""
    raw = await request.body()
    if raw.strip() and not isinstance(read_json(raw), dict):
        raise RequestValidationError([{"loc": ("body",), "msg": "send no body, or a JSON "
                                       "object", "type": "dict_type"}])


def fallback_router(app: FastAPI, prefixes: tuple[str, ...]) -> APIRouter:
    """404 / 405 in the one error shape for paths under ``prefixes`` that no route serves
    (the Gradio app mounted at ``/`` would otherwise answer them in its own shape).
    Include it after every other router."""
    router = APIRouter(include_in_schema=False)
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]

    async def unknown(request: Request) -> JSONResponse:
        allowed = sorted(_methods_of(app, request.url.path))
        if allowed:
            return JSONResponse(error_body(405, f"{request.method} is not allowed on "
                                           f"{request.url.path}; use {', '.join(allowed)}",
                                           "MethodNotAllowed"),
                                status_code=405, headers={"Allow": ", ".join(allowed)})
        return error_response(404, f"no route {request.url.path}; see /docs for the API",
                              "NotFoundError")

    for prefix in prefixes:
        router.add_api_route(prefix.rstrip("/") + "/{rest:path}", unknown, methods=methods)
    return router


def _methods_of(app: FastAPI, path: str) -> set[str]:
    """The methods the schema documents for ``path`` (templates like ``{name}`` match
    one path segment)."""
    found = set()
    for template, item in app.openapi()["paths"].items():
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, path):
            found |= {m.upper() for m in item}
    return found


def validate_body(model: type[BaseModel], data: object) -> BaseModel:
    """``model`` from parsed data; a mismatch is a RequestValidationError (422)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise RequestValidationError(e.errors()) from None
    except RecursionError:
        raise BodyError("the body is nested too deeply; send a flat JSON object") from None


def _request(body: TtsBody, prompt: Path | None) -> SynthesisRequest:
    return SynthesisRequest(text=body.text, mode=body.mode, voice=body.voice,
                            prompt_path=str(prompt) if prompt else None,
                            prompt_text=body.prompt_text, speed=body.speed, seed=body.seed,
                            strength=body.strength, instruction=body.instruction)


def _speech_voice(synth: Synthesizer, name: str) -> str:
    """Our voice (bundled or saved, saved names winning over OpenAI's), else the default."""
    caps = synth.capabilities
    if name in caps.voices:
        return name
    saved = synth.voices.find(name) if caps.saved_voices else None
    if saved is not None:
        return saved.name
    if name.lower() in OPENAI_VOICES:
        return caps.default_voice
    raise TextError(f"unknown voice {name!r}; use one of "
                    f"{', '.join(synth.voice_names())} or an OpenAI voice name")


def engine_id(synth: Synthesizer) -> str:
    """The model id the OpenAI surface lists: ``cosyvoice-<engine>``."""
    return f"cosyvoice-{synth.capabilities.name}"


def tts_schema(synth: Synthesizer) -> dict:
    """TtsBody's JSON schema with ``mode`` limited to the engine's modes."""
    schema = TtsBody.model_json_schema()
    schema["properties"]["mode"]["enum"] = list(synth.capabilities.modes)
    return schema


def api_router(synth: Synthesizer, gate: SynthesisGate) -> APIRouter:
    api = Api(synth, gate)
    router = APIRouter()

    @router.post("/api/v1/tts", tags=["tts"], response_class=Response,
                 responses=error_responses(413, 422, 429, 503, 507),
                 openapi_extra={"requestBody": {"content": {
                     "application/json": {"schema": tts_schema(synth)},
                     "multipart/form-data": {"schema": {"type": "object", "properties": {
                         **tts_schema(synth)["properties"],
                         "prompt": {"type": "string", "format": "binary"}}}}}}})
    async def tts(request: Request) -> Response:
        """Speak text in any mode; JSON, or multipart with a ``prompt`` recording."""
        body, prompt = await api.parse_tts(request)
        req = _request(body, prompt)
        fmt = check_format(body.format)
        try:
            if body.stream:
                return await run_in_threadpool(api.streaming, req, fmt)
            return await api.until_drain_deadline(api.full, req, fmt)
        finally:
            # Streaming too: the prompt is read before the first chunk is sent.
            if prompt is not None:
                discard_upload(prompt)

    @router.post("/v1/audio/speech", tags=["openai"], response_class=Response,
                 responses=error_responses(422, 429, 503))
    async def speech(body: SpeechBody) -> Response:
        """OpenAI-compatible: ``openai.audio.speech.create(model=..., voice=..., input=...)``.

        ``voice``: a bundled or saved voice name, else an OpenAI name (the default voice).
        """
        fmt = "pcm16" if body.response_format == "pcm" else body.response_format
        fmt = check_format(fmt)
        voice = await run_in_threadpool(_speech_voice, synth, body.voice)
        instruction = (body.instructions or "").strip()
        if instruction and not synth.capabilities.instructions:
            raise TextError(f"the {synth.capabilities.name} engine does not take "
                            "instructions; leave 'instructions' empty")
        req = SynthesisRequest(text=body.input, voice=voice, speed=body.speed,
                               mode="instruct" if instruction else "preset",
                               instruction=instruction)
        return await api.until_drain_deadline(api.full, req, fmt)

    @router.get("/v1/models", tags=["openai"])
    def models() -> dict:
        return {"object": "list", "data": [
            {"id": engine_id(synth), "object": "model", "created": 0, "owned_by": "local"},
            {"id": "tts-1", "object": "model", "created": 0, "owned_by": "local"}]}

    @router.get("/api/v1/engine", tags=["tts"])
    def engine() -> dict:
        """The serving engine's capabilities: modes, languages, voices (saved ones too
        where it takes them), streaming, instructions, seed determinism, sample rate."""
        return {**synth.capabilities.to_dict(), "voices_saved": (
            synth.voices.names() if synth.capabilities.saved_voices else [])}

    return router
