"""One error shape for every route: ``{"error": {"message", "type", "code"}}`` (OpenAI's,
so its client shows the message), the handlers that produce it, the OpenAPI schema that
documents it, and the body parsing that turns what cannot be read into a 400."""

from __future__ import annotations

import errno
import json
import logging
import re
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from python_multipart.exceptions import MultipartParseError
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException

from cosyvoice.audio.io import storage_error
from cosyvoice.errors import (
    BodyError,
    BusyError,
    CosyVoiceError,
    error_body,
)

logger = logging.getLogger(__name__)

STORAGE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES)
# A 503 whose cause gives no estimate (a model that failed to load or is not installed):
# the Retry-After it still carries, so that a client's retry loop does not spin.
UNAVAILABLE_RETRY_S = 30


class ErrorDetail(BaseModel):
    message: str = Field(description="what is wrong and what to do")
    type: str = Field(description="error class, e.g. TextError, QueueFullError")
    code: int = Field(description="the HTTP status")


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer of this API (OpenAI's error shape)."""

    error: ErrorDetail


_ERROR_TEXT = {
    400: "the body cannot be parsed (not JSON, nested too deeply, broken multipart)",
    403: "the admin token is missing or wrong, or the request came from another site's page",
    404: "no such voice or model", 409: "name taken, or the voice store is full",
    413: "the body is over the route's limit (uploads: --max-upload-mb)",
    415: "the Content-Type is not one the route reads (application/json, multipart/form-data)",
    422: "an invalid field (the message names it)",
    429: "busy: every slot and queue place taken; retry after Retry-After seconds",
    503: "draining, or a model is unavailable; retry after Retry-After seconds",
    507: "no disk space left to save the audio or the upload",
}


# The guards' refusals, which every state-changing route (and every body) can meet.
GUARD_ERRORS = {"post": (400, 403, 413, 415), "put": (400, 403, 413, 415),
                "patch": (400, 403, 413, 415), "delete": (403,)}


def use_error_body_in_schema(app: FastAPI) -> None:
    """Document every 4xx/5xx of the OpenAPI schema as ErrorBody, FastAPI's automatic
    422 (HTTPValidationError) included: the answers are that shape; and the guards'
    refusals (cross-site 403, 413, 415, 400) on every route they apply to."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        ref = {"$ref": "#/components/schemas/ErrorBody"}
        for item in schema.get("paths", {}).values():
            for method, op in item.items():
                responses = op.setdefault("responses", {})
                for code in GUARD_ERRORS.get(method, ()):
                    responses.setdefault(str(code), {"description": _ERROR_TEXT[code]})
                for code, resp in responses.items():
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


def error_response(status: int, message: str, kind: str, retry_after_s: int | None = None,
                   extra: dict | None = None) -> JSONResponse:
    """The one error answer of every route: :func:`error_body` (plus ``extra`` fields beside
    ``error``), and ``Retry-After`` (the number its message says) when retrying later will
    work. Every 503 carries one: without an estimate, :data:`UNAVAILABLE_RETRY_S`."""
    if status == 503 and not retry_after_s:
        retry_after_s = UNAVAILABLE_RETRY_S
        message = f"{message} (Retry-After: {retry_after_s} s)"
    headers = {"Retry-After": str(retry_after_s)} if retry_after_s else None
    return JSONResponse({**error_body(status, message, kind), **(extra or {})},
                        status_code=status, headers=headers)


def cosy_error_response(exc: CosyVoiceError) -> JSONResponse:
    retry = exc.retry_after_s if isinstance(exc, BusyError) else None
    return error_response(exc.http_status, str(exc), type(exc).__name__, retry)


class BodyRefused(HTTPException, MultipartParseError):
    """Raised from an ASGI ``receive`` when the body breaks its route's rule (too big, the
    wrong kind, cut off; :mod:`cosyvoice.server.body_guard`), so that the route stops
    reading; the guard answers ``error``. An HTTPException, so that FastAPI's own body
    reader passes it on as it is; and a multipart parse error, so that a form parser
    (Starlette's; Gradio's upload, which stores files as they arrive) deletes the files it
    began, as it does for a malformed form."""

    def __init__(self, error: CosyVoiceError) -> None:
        super().__init__(error.http_status, str(error))
        self.error = error


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
        if isinstance(exc, BodyRefused):
            return cosy_error_response(exc.error)
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
               413: "UploadTooLargeError", 415: "MediaTypeError"}


def read_json(raw: bytes) -> object:
    """Parse a JSON body, read as UTF-8 (a leading BOM allowed): anything unparsable —
    other encodings (UTF-16 …), nesting deep enough to hit Python's recursion limit — is a
    :class:`BodyError` (400)."""
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except RecursionError:
        raise BodyError("the JSON body is nested too deeply; send a flat JSON object") \
            from None
    except UnicodeDecodeError:
        raise BodyError("the JSON body is not UTF-8 text; send it encoded as UTF-8") from None
    except ValueError as e:  # JSONDecodeError
        raise BodyError(f"the body is not valid JSON ({e}); send a JSON object, or "
                        "multipart/form-data with a 'prompt' file") from None


async def read_form(request: Request, hint: str, *, max_files: int = 1,
                    max_fields: int = 20, max_part_size: int = 1024 * 1024) -> FormData:
    """A multipart form, at most ``max_files`` files and ``max_fields`` fields; a malformed
    one is a :class:`BodyError` (400) that ends with ``hint`` (what the route takes). A
    refusal of the body guard (too big, cut off) passes on as it is."""
    try:
        return await request.form(max_files=max_files, max_fields=max_fields,
                                  max_part_size=max_part_size)
    except HTTPException as e:  # starlette's malformed / too many parts
        refused = _refusal_behind(e)
        if refused is not None:
            raise refused from None
        raise BodyError(f"invalid multipart form: {e.detail}; {hint}") from None


def _refusal_behind(exc: BaseException) -> BodyRefused | None:
    """The guard's refusal that caused ``exc`` (Starlette's parser re-raises it as a
    malformed form), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BodyRefused):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


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
