"""Liveness and readiness endpoints.

``/health/live`` answers while the process serves HTTP; ``/health/ready`` is 200 only
when every required model is READY and the app is not draining (503 otherwise).
"""

from __future__ import annotations

import os
import threading
import time

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from cosyvoice.lifecycle.manager import ModelManager


class AppState:
    """Process-wide flags shared by the UI, the API and the signal handlers."""

    def __init__(self) -> None:
        self.started_at = time.time()
        self.draining = threading.Event()
        self.loading_done = threading.Event()


def health_router(manager: ModelManager, state: AppState) -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/health/live")
    def live() -> dict:
        return {"status": "alive", "pid": os.getpid(),
                "uptime_s": round(time.time() - state.started_at, 1)}

    @router.get("/health/ready")
    def ready() -> JSONResponse:
        models = manager.states()
        ok = manager.ready() and not state.draining.is_set()
        reason = ("draining" if state.draining.is_set()
                  else "ready" if ok else "loading" if not state.loading_done.is_set()
                  else "models not ready")
        body = {"ready": ok, "status": reason, "pid": os.getpid(), "models": models}
        return JSONResponse(body, status_code=200 if ok else 503)

    return router
