"""Model states and admin actions over REST, in the API's JSON error shape.

``GET /api/v1/models`` lists every model's state. ``POST /api/v1/models/{name}/load``,
``/unload``, ``/reload`` and ``POST /api/v1/restart`` are admin actions (``load`` and
``reload`` of a folder model — a CosyVoice engine — take ``{"model_dir": "DIR"}`` to load
another released folder): they check the
token exactly like the ``/admin`` routes (:meth:`AdminActions.check_token`; header
``X-Admin-Token`` or ``Authorization: Bearer``; needed when the app listens beyond
loopback) and share their restart cooldown.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from cosyvoice.errors import NotFoundError
from cosyvoice.server.admin import AdminActions, RestartBody
from cosyvoice.server.admin_auth import is_proxied, token_from
from cosyvoice.server.errors import (
    error_responses,
    json_object_or_empty,
    read_json,
    validate_body,
)

TOKEN_HELP = "admin token (needed when the app listens beyond loopback)"


class FolderBody(BaseModel):
    model_dir: str | None = Field(None, min_length=1, max_length=1000, description=(
        "a released CosyVoice folder on the server to load this model from (folder models "
        "only; GET /api/v1/models shows each model's location)"))


async def folder_body(request: Request) -> str | None:
    """The optional ``model_dir`` of a load/reload body (no body: none)."""
    raw = await request.body()
    if not raw.strip():
        return None
    return validate_body(FolderBody, read_json(raw)).model_dir


def models_router(actions: AdminActions) -> APIRouter:
    manager = actions.manager
    router = APIRouter(prefix="/api/v1", tags=["models"])

    def state_of(name: str) -> dict[str, Any]:
        for m in manager.states():
            if m["name"] == name:
                return m
        raise NotFoundError(f"no model is called {name!r}; models: "
                            f"{', '.join(manager.names())}")

    def admin(request: Request, name: str, token: str | None, auth: str | None) -> None:
        actions.check_token(token_from(token, auth), is_proxied(request.headers))
        state_of(name)

    @router.get("/models")
    def models() -> dict:
        """Every model: state (UNLOADED, LOADING, READY, UNLOADING, FAILED), reason, memory."""
        return {"models": manager.states(), "token_required": actions.token_required}

    @router.post("/models/{name}/load", responses=error_responses(400, 403, 404, 422, 503),
                 openapi_extra={"requestBody": {"content": {"application/json": {
                     "schema": FolderBody.model_json_schema()}}}})
    def load(request: Request, name: str, model_dir: str | None = Depends(folder_body),
             x_admin_token: str | None = Header(None, description=TOKEN_HELP),
             authorization: str | None = Header(None)) -> dict:
        """Load a model if it is not READY (503 with the reason when loading fails); with
        ``model_dir``, (re)load a folder model from that folder."""
        admin(request, name, x_admin_token, authorization)
        if model_dir:
            manager.load_from(name, model_dir)
        else:
            manager.load(name)
        return {"model": state_of(name)}

    @router.post("/models/{name}/unload", responses=error_responses(400, 403, 404, 422),
                 dependencies=[Depends(json_object_or_empty)])
    def unload(request: Request, name: str,
               x_admin_token: str | None = Header(None, description=TOKEN_HELP),
               authorization: str | None = Header(None)) -> dict:
        """Drop the model and free its memory; it loads again on first use."""
        admin(request, name, x_admin_token, authorization)
        report = manager.unload(name)
        return {"model": state_of(name), "report": report}

    @router.post("/models/{name}/reload", responses=error_responses(400, 403, 404, 422, 503),
                 openapi_extra={"requestBody": {"content": {"application/json": {
                     "schema": FolderBody.model_json_schema()}}}})
    def reload(request: Request, name: str, model_dir: str | None = Depends(folder_body),
               x_admin_token: str | None = Header(None, description=TOKEN_HELP),
               authorization: str | None = Header(None)) -> dict:
        """Build a fresh instance and swap it in; on failure the old one keeps serving
        (with ``model_dir``: from that folder, which replaces the old one on success)."""
        admin(request, name, x_admin_token, authorization)
        report = (manager.load_from(name, model_dir) if model_dir
                  else manager.reload(name))
        return {"model": state_of(name), "report": report}

    @router.post("/restart", status_code=202, responses=error_responses(400, 403, 422, 503))
    def restart(request: Request, body: RestartBody | None = None,
                x_admin_token: str | None = Header(None, description=TOKEN_HELP),
                authorization: str | None = Header(None)) -> JSONResponse:
        """Hard restart through restart.sh (drain, free GPU memory, start, wait ready).

        503 with Retry-After inside the cooldown or while a restart runs.
        """
        keep = bool(body.keep_outputs) if body is not None else False
        out = actions.restart(token_from(x_admin_token, authorization), keep, "api",
                              proxied=is_proxied(request.headers))
        return JSONResponse(out, status_code=202)

    return router
