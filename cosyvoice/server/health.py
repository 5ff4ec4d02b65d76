"""Liveness and readiness endpoints.

``/health/live`` answers while the process serves HTTP. ``/health/ready`` is 200 when
the app is not draining, start-up loading is done, and every required model can serve:
READY, or UNLOADED on purpose (``--no-preload``, idle unload, an admin's unload), which
loads on its first use — that request waits for the load. The body names those models
in ``loads_on_first_use``. A required model LOADING, UNLOADING or FAILED makes it 503
(with ``Retry-After``, as every 503 of the app).

``set_aside`` lists the damaged state files this process renamed away (a job.json, the
lexicon, a saved voice …; :mod:`cosyvoice.state_files`): they do not affect readiness.

``engines`` lists every served engine with its state and FAILED reason. A CosyVoice engine's
model is not required: a bad folder leaves it FAILED (requests that name no engine then go to
the offline engine) while the app stays ready, so a watchdog never restart-loops on it.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from cosyvoice.lifecycle.drain import RequestTracker
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.state_files import set_aside_files

READY_POLL_S = 5  # a readiness 503 outside a drain: poll again this soon


class AppState:
    """Process-wide flags shared by the UI, the API and the signal handlers."""

    def __init__(self) -> None:
        self.started_at = time.time()
        self.draining = threading.Event()
        self.loading_done = threading.Event()
        self.requests = RequestTracker(self.draining)


def readiness(manager: ModelManager, state: AppState) -> tuple[bool, str]:
    """``(ready, status)``: not draining, start-up loading done, and every required model
    READY, or UNLOADED on purpose (``--no-preload`` or unloaded idle: it loads on first use).
    """
    if state.draining.is_set():
        return False, "draining"
    if not state.loading_done.is_set():
        return False, "loading"
    bad = [m["name"] for m in manager.states()
           if m["required"] and m["state"] not in ("READY", "UNLOADED")]
    return (False, "models not ready: " + ", ".join(bad)) if bad else (True, "ready")


def not_ready_retry_s(state: AppState) -> int:
    """Retry-After of a 503 readiness: while draining, when the new process should be ready;
    else a poll interval (start-up loading, a model loading)."""
    if state.draining.is_set():
        return max(1, math.ceil(state.requests.retry_after_s()))
    return READY_POLL_S


def health_router(manager: ModelManager, state: AppState,
                  engines: Callable[[], list[dict]] | None = None) -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/health/live")
    def live() -> dict:
        return {"status": "alive", "pid": os.getpid(),
                "uptime_s": round(time.time() - state.started_at, 1)}

    @router.get("/health/ready")
    def ready() -> JSONResponse:
        models = manager.states()
        ok, reason = readiness(manager, state)
        later = [m["name"] for m in models if m["required"] and m["state"] == "UNLOADED"]
        body = {"ready": ok, "status": reason, "pid": os.getpid(),
                "loads_on_first_use": later, "models": models,
                "engines": engines() if engines is not None else [],
                "set_aside": set_aside_files()}
        if ok:
            return JSONResponse(body)
        return JSONResponse(body, status_code=503,
                            headers={"Retry-After": str(not_ready_retry_s(state))})

    return router
