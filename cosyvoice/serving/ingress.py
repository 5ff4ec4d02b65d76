"""The HTTP app of the Ray Serve ingress: the app's REST and OpenAI routes (no Gradio), with
every synthesis sent to a synthesis replica through a Serve deployment handle.

The routes are the server's own (``api_router``, ``voices_router``, the error handlers and
fallback): one path for parsing, validation and the error shape. Only where the work runs
differs — :class:`RemoteApi` overrides ``Api.run_full`` / ``run_stream`` to call the
replicas. Serve's router picks the replica (power of two choices on queue length), bounds
each replica's ongoing requests and queues the rest; a refusal by Serve, a replica that died
mid-request and a replica's own typed error all come back as the one JSON error shape.

Admin routes (``/admin/models``, ``/admin/reload``) fan out to every replica with
``DeploymentHandle.broadcast``; the admin token is checked here, at the ingress.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from cosyvoice.errors import BusyError, CosyVoiceError, QueueFullError
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from cosyvoice.server.admin import AdminActions
from cosyvoice.server.admin_auth import is_proxied, token_from
from cosyvoice.server.api import Api, api_router
from cosyvoice.server.errors import (
    error_responses,
    fallback_router,
    install_error_handlers,
    use_error_body_in_schema,
)
from cosyvoice.server.guards import install_guards
from cosyvoice.server.lexicon_api import lexicon_router
from cosyvoice.server.transcribe_api import transcribe_router
from cosyvoice.server.voices_api import voices_router
from cosyvoice.serving.replica import Job

logger = logging.getLogger(__name__)

REPLICA_GONE_RETRY_S = 1  # Serve starts a replacement; the other replicas take the retry


@asynccontextmanager
async def replica_errors() -> AsyncIterator[None]:
    """Translate what a handle call raises into the app's typed errors: a replica's own
    error (wrapped by Ray) as itself, Serve's back-pressure as 429, a replica lost
    mid-request as a retryable 503."""
    from ray.exceptions import RayActorError, RayTaskError
    from ray.serve.exceptions import (
        BackPressureError,
        DeploymentUnavailableError,
        ReplicaUnavailableError,
    )

    try:
        yield
    except RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, CosyVoiceError):
            raise cause from None
        raise
    except BackPressureError:
        raise QueueFullError("The synthesis replicas are busy (every replica's queue is "
                             "full); retry in a few seconds") from None
    except (RayActorError, ReplicaUnavailableError, DeploymentUnavailableError) as e:
        logger.warning("a synthesis replica was lost mid-request: %s", type(e).__name__)
        raise BusyError("The synthesis replica serving this request stopped; Ray Serve is "
                        "replacing it — retry now", REPLICA_GONE_RETRY_S) from None


class RemoteApi(Api):
    """The server's Api with syntheses run by the synthesis deployment."""

    def __init__(self, synth: Synthesizer, gate: SynthesisGate, handle) -> None:
        super().__init__(synth, gate)
        self.handle = handle
        self.stream_handle = handle.options(stream=True)

    async def run_full(self, req: SynthesisRequest, fmt: str,
                       timestamps: bool = False) -> Response:
        async with replica_errors():
            answer = await self.handle.full.remote(Job.of(req, fmt, timestamps))
        return answer.response()

    async def run_stream(self, req: SynthesisRequest, fmt: str) -> Response:
        chunks = self.stream_handle.stream.remote(Job.of(req, fmt))
        async with replica_errors():
            head = await chunks.__anext__()  # the replica's 4xx arrives here, before a 200

        async def body() -> AsyncIterator[bytes]:
            done = False
            try:
                async for chunk in chunks:
                    yield chunk
                done = True
            finally:
                if not done:  # the client hung up: Serve cancels the replica's generator
                    chunks.cancel()

        return StreamingResponse(body(), media_type=head["media_type"],
                                 headers=head["headers"])


class ReplicaMetrics(Collector):
    """Every replica's ``/metrics`` (the app's own collector, run in the replica), each
    sample labelled with its ``replica``. ``texts``: ``[(replica, Prometheus text), ...]``,
    fetched at scrape time with one broadcast."""

    def __init__(self, texts: list[tuple[str, str]]) -> None:
        self.texts = texts

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for replica, text in self.texts:
            for family in text_string_to_metric_families(text):
                merged = families.setdefault(family.name, Metric(
                    family.name, family.documentation, family.type, family.unit))
                merged.samples += [s._replace(labels={**s.labels, "replica": replica})
                                   for s in family.samples]
        yield from families.values()


def ingress_routes(handle, admin: AdminActions) -> APIRouter:
    """Health, metrics and admin routes answered by the replicas (via broadcast)."""
    router = APIRouter()

    @router.get("/health/live", tags=["health"])
    def live() -> dict:
        return {"status": "alive"}

    @router.get("/health/ready", tags=["health"])
    async def ready() -> JSONResponse:
        """One replica's readiness (Serve routes only to replicas that passed their health
        check, so this is 200 while any replica serves)."""
        async with replica_errors():
            body = await handle.ready_report.remote()
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    @router.get("/metrics", include_in_schema=False)
    async def scrape() -> Response:
        async with replica_errors():
            texts = await handle.broadcast("metrics_text").results_async()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ReplicaMetrics(texts))
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @router.get("/admin/models", tags=["admin"])
    async def models() -> dict:
        async with replica_errors():
            reports = await handle.broadcast("ready_report").results_async()
        return {"replicas": reports, "token_required": admin.token_required}

    @router.post("/admin/reload", tags=["admin"], responses=error_responses(403, 503))
    async def reload(request: Request, x_admin_token: str | None = Header(None),
                     authorization: str | None = Header(None)) -> dict:
        """Reload the models of every replica (each swaps in its new models only on
        success, so requests keep running). For a rolling reload, change the deployment's
        ``user_config.reload`` and ``serve deploy`` (docs/ray.md)."""
        admin.check_token(token_from(x_admin_token, authorization),
                          is_proxied(request.headers))
        async with replica_errors():
            reports = await handle.broadcast("reload").results_async()
        return {"replicas": reports}

    return router


def create_ingress_app(app_args: list[str], handle) -> FastAPI:
    """The ingress's FastAPI app for the app's settings ``app_args``; builds the engines'
    capabilities (no model loads here) and routes syntheses to ``handle``."""
    from cosyvoice.bootstrap import build
    from cosyvoice.server.health import AppState
    from cosyvoice.settings import Settings

    settings = Settings.from_args(app_args)
    settings.ensure_dirs()
    state = AppState()
    services = build(settings, "cpu", tracker=state.requests)
    synth = services.synth
    gate = SynthesisGate(settings.concurrency, settings.queue_size, state.requests)
    app = FastAPI(title="CosyVoice WebUI on Ray Serve", version="0.1.0")
    install_error_handlers(app)
    install_guards(app, settings)
    app.include_router(ingress_routes(handle, AdminActions(services.manager, state, settings)))
    app.include_router(api_router(synth, gate, RemoteApi(synth, gate, handle)))
    app.include_router(voices_router(synth, gate))
    # The user lexicon: one file under models/ with a file lock, which every replica's text
    # pass re-reads when it changes (the same shared folder as the saved voices).
    app.include_router(lexicon_router(synth.lexicon))
    # Prompt transcription runs here, as ``prompt_text: "auto"`` already does (the recognizer
    # loads on first use, in the ingress, under its gate).
    app.include_router(transcribe_router(synth, gate))
    app.include_router(fallback_router(app, ("/api", "/v1", "/admin", "/health")))
    use_error_body_in_schema(app)
    return app
