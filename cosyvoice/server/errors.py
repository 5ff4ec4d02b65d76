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
