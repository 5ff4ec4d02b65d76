"""Admin actions — reload, unload idle, load a folder, hard restart — and their JSON
routes under ``/admin``.

:class:`AdminActions` holds the logic (token check, restart cooldown, launching
restart.sh); the Models tab (:mod:`cosyvoice.server.ui_models`) and the routes here and in
:mod:`cosyvoice.server.models_api` only translate its results and errors. Who needs the
token: :mod:`cosyvoice.server.admin_auth`.
"""

from __future__ import annotations

import fcntl
import hmac
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from cosyvoice.errors import BusyError, TextError
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.lifecycle.restarts import RestartLog, launch_restart
from cosyvoice.server.admin_auth import (
    AdminError,
    is_loopback,
    is_proxied,
    resolve_admin_token,
    token_from,
)
from cosyvoice.server.health import AppState
from cosyvoice.settings import Settings

logger = logging.getLogger(__name__)


class RestartBody(BaseModel):
    keep_outputs: bool = Field(False, description="keep generated audio in outputs/")


class AdminActions:
    """What the Models panel and the /admin routes do, in one place (one cooldown)."""

    def __init__(self, manager: ModelManager, state: AppState, settings: Settings) -> None:
        self.manager = manager
        self.state = state
        self.settings = settings
        self.token_required = not is_loopback(settings.host)  # for every request
        self._token = resolve_admin_token(settings) if self.token_required else ""
        self.restart_log = RestartLog.for_settings(settings)
        self._restart_requested = 0.0
        self._lock = threading.Lock()

    def needs_token(self, proxied: bool = False) -> bool:
        return self.token_required or proxied

    def check_token(self, token: str | None, proxied: bool = False) -> None:
        """Raise AdminError unless ``token`` is right, when one is needed: the app listens
        beyond loopback, or the request may come from beyond this machine (``proxied``:
        :func:`~cosyvoice.server.admin_auth.is_proxied`)."""
        if not self.needs_token(proxied):
            return
        with self._lock:
            if not self._token:  # loopback app, first proxied admin request
                self._token = resolve_admin_token(self.settings)
        if not token or not hmac.compare_digest(token.strip().encode(), self._token.encode()):
            why = ("the app listens beyond this machine" if self.token_required
                   else "the request came through a reverse proxy or names a host that is "
                   "not a loopback address")
            raise AdminError(f"This action needs the admin token ({why}). Find it in "
                             "--admin-token / COSYVOICE_ADMIN_TOKEN or in "
                             f"{Path(self.settings.pidfile).parent / 'admin_token'} "
                             "on the server.")

    def load_folder(self, token: str | None, name: str, path: str,
                    proxied: bool = False) -> dict[str, Any]:
        """Point a folder model (a CosyVoice engine) at ``path`` and load it; a bad folder
        leaves it FAILED with the reason (ModelError) and the other engines serving."""
        self.check_token(token, proxied)
        if not str(path or "").strip():
            raise TextError("type the model folder's path on the server / 请填写模型目录")
        return self.manager.load_from(name, str(path).strip())

    def reload(self, token: str | None, proxied: bool = False) -> dict[str, Any]:
        """Soft restart: rebuild every loaded (or failed) model; failures keep the old one."""
        self.check_token(token, proxied)
        return self.reload_models()

    def reload_models(self) -> dict[str, Any]:
        """:meth:`reload` once the caller is known to be allowed (a Ray Serve replica: the
        ingress checked the token)."""
        t0 = time.perf_counter()
        states = self.manager.states()
        results = self.manager.load_many([m["name"] for m in states if m["state"] == "READY"],
                                         reload=True)
        results.update(self.manager.load_many(
            [m["name"] for m in states if m["state"] == "FAILED"]))
        done = [name for name, r in results.items() if r == "READY"]
        failed = {name: r for name, r in results.items() if r != "READY"}
        seconds = time.perf_counter() - t0
        logger.info("soft reload: %s in %.2f s; failed: %s", done, seconds, failed or "none")
        return {"reloaded": done, "failed": failed, "seconds": round(seconds, 3)}

    def unload_idle(self, token: str | None, proxied: bool = False) -> list[dict[str, Any]]:
        self.check_token(token, proxied)
        reports = self.manager.unload_idle(self.settings.idle_unload_s)
        logger.info("unload idle: %s", [r["name"] for r in reports] or "nothing idle")
        return reports

    def restart(self, token: str | None, keep_outputs: bool, reason: str = "button",
                proxied: bool = False) -> dict[str, Any]:
        """Launch restart.sh detached; raises BusyError inside the cooldown or a drain."""
        self.check_token(token, proxied)
        with self._lock:
            self._check_cooldown()
            proc = launch_restart(self.settings, keep_outputs, reason)
            self._restart_requested = time.time()
        return {"restarting": True, "old_pid": os.getpid(), "restart_pid": proc.pid,
                "keep_outputs": bool(keep_outputs),
                "log": str(Path(self.settings.log_dir) / "restart.log")}

    def _check_cooldown(self) -> None:
        if self.state.draining.is_set():
            raise BusyError.retry_in(self.state.requests.retry_after_s(),
                                     "A restart is already in progress (this page reloads "
                                     "when the new process is ready)")
        if restart_running(Path(self.settings.pidfile).parent / "restart.lock"):
            raise BusyError.retry_in(5, "A restart is still finishing")
        last = max(self._restart_requested, self.restart_log.last_time() or 0.0)
        wait = self.settings.restart_cooldown_s - (time.time() - last)
        if wait > 0:
            raise BusyError.retry_in(wait, f"The app was restarted {time.time() - last:.0f} s "
                                     "ago; restarts are at least "
                                     f"{self.settings.restart_cooldown_s:.0f} s apart")

    def clear_preview(self) -> dict[str, Any]:
        """What a restart would delete: file counts and sizes of cache/ and outputs/."""
        out_files, out_mb = _dir_usage(Path(self.settings.outputs_dir))
        cache_files, cache_mb = _dir_usage(Path(self.settings.cache_dir))
        return {"outputs": str(self.settings.outputs_dir), "out_files": out_files,
                "out_mb": out_mb, "cache": str(self.settings.cache_dir),
                "cache_files": cache_files, "cache_mb": cache_mb,
                "drain": self.settings.drain_timeout_s}


def restart_running(lock_path: Path) -> bool:
    """True while a restart.sh holds its lock (it takes it with flock(1))."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we may have taken
    return False


def _dir_usage(path: Path) -> tuple[int, float]:
    files, size = 0, 0
    for p in path.rglob("*") if path.is_dir() else []:
        if p.is_file() and p.name not in (".gitkeep", "README.md"):
            files += 1
            size += p.stat().st_size
    return files, size / 2**20


# ---- JSON routes ---------------------------------------------------------------------

async def _restart_body(request: Request) -> bool:
    """``keep_outputs`` of an optional JSON body ``{"keep_outputs": bool}``; a body that
    is not that is refused (400 unparsable, 422 invalid), not silently ignored."""
    from cosyvoice.server.errors import read_json, validate_body

    raw = await request.body()
    if not raw.strip():
        return False
    body = validate_body(RestartBody, read_json(raw))
    return bool(body.keep_outputs)


def admin_router(actions: AdminActions) -> APIRouter:
    """``POST /admin/restart|reload|unload`` (token via ``X-Admin-Token`` or Bearer) and
    ``GET /admin/models``. Errors are the API's one shape (see :mod:`cosyvoice.server.api`)."""
    from cosyvoice.server.errors import error_response, error_responses, json_object_or_empty

    router = APIRouter(prefix="/admin", tags=["admin"])

    @router.get("/models")
    def models() -> dict:
        return {"models": actions.manager.states(), "in_flight": actions.state.requests.in_flight,
                "token_required": actions.token_required}

    @router.post("/restart", status_code=202,
                 responses=error_responses(400, 403, 422, 503),
                 openapi_extra={"requestBody": {"required": False, "content": {
                     "application/json": {"schema": {"type": "object", "properties": {
                         "keep_outputs": {"type": "boolean", "default": False}}}}}}})
    async def restart(request: Request, x_admin_token: str | None = Header(None),
                      authorization: str | None = Header(None)) -> JSONResponse:
        keep = await _restart_body(request)
        out = actions.restart(token_from(x_admin_token, authorization), keep, "api",
                              proxied=is_proxied(request.headers))
        return JSONResponse(out, status_code=202)

    @router.post("/reload", responses=error_responses(400, 403, 422, 503),
                 dependencies=[Depends(json_object_or_empty)])
    def reload(request: Request, x_admin_token: str | None = Header(None),
               authorization: str | None = Header(None)) -> JSONResponse:
        """200 with the report; 503 (the error shape, plus the report) when a model failed
        to reload (it keeps serving its old instance)."""
        out = actions.reload(token_from(x_admin_token, authorization),
                             proxied=is_proxied(request.headers))
        if not out["failed"]:
            return JSONResponse(out)
        why = "; ".join(f"{name}: {reason}" for name, reason in out["failed"].items())
        return error_response(503, f"reload failed ({why}); the old instances keep serving",
                              "ModelError", extra=out)

    @router.post("/unload", responses=error_responses(400, 403, 422),
                 dependencies=[Depends(json_object_or_empty)])
    def unload(request: Request, x_admin_token: str | None = Header(None),
               authorization: str | None = Header(None)) -> JSONResponse:
        out = actions.unload_idle(token_from(x_admin_token, authorization),
                                  proxied=is_proxied(request.headers))
        return JSONResponse({"unloaded": out})

    return router
