"""One synthesis replica: the app's services (bootstrap) in a Ray Serve replica process.

The ingress (``ingress.py``) parses and validates an HTTP request with the server's own code
and sends the replica a :class:`Job`; the replica runs it through the server's own
:class:`~cosyvoice.server.api.Api` (gate, Synthesizer, encoding, headers — one path with the
single-process app) and returns the bytes. Nothing stays on this node's disk: a prompt
upload travels in the job and is deleted after use, the output WAV the Synthesizer saves is
deleted once encoded (the client has the audio).

Ray calls :meth:`SynthesisReplica.check_health` every few seconds: it raises when the app's
readiness rule fails (a required model not READY) or the process has grown past
``max_rss_mb``, and Serve then replaces the replica — the cluster's restart button.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from cosyvoice.pipeline import SynthesisRequest
from cosyvoice.server.uploads import discard_upload, safe_upload_name

logger = logging.getLogger(__name__)

REPLICA_HEADER = "X-CosyVoice-Replica"  # which replica answered (load spread, fault tests)


@dataclass
class Job:
    """What the ingress sends a replica: the parsed request, the output format, and the
    prompt upload's bytes (the ingress's temporary file is on another node)."""

    request: dict
    format: str
    prompt: bytes | None = None
    prompt_name: str = "prompt.bin"
    extra_headers: dict = field(default_factory=dict)
    timestamps: bool = False  # answer JSON with the sentence cues (the tts route's option)

    @classmethod
    def of(cls, req: SynthesisRequest, fmt: str, timestamps: bool = False) -> Job:
        prompt, name = None, "prompt.bin"
        if req.prompt_path:
            path = Path(req.prompt_path)
            prompt, name = path.read_bytes(), path.name
        return cls({**asdict(req), "prompt_path": None}, fmt, prompt, name,
                   timestamps=timestamps)


@dataclass
class Answer:
    """A whole-audio answer, as plain data that crosses the process boundary."""

    body: bytes
    media_type: str
    headers: dict[str, str]

    def response(self) -> Response:
        return Response(self.body, media_type=self.media_type, headers=self.headers)


def replica_name() -> str:
    """Serve's id of this replica (``host:pid`` outside Serve)."""
    try:
        from ray import serve

        return serve.get_replica_context().replica_id.unique_id
    except Exception:  # not in a Serve replica (tests, a plain process)
        return f"{socket.gethostname()}:{os.getpid()}"


class SynthesisReplica:
    """The models and the synthesis of one replica. ``app_args``: the app's command-line
    arguments (``python app.py --help``), so a replica is configured like the app."""

    def __init__(self, app_args: list[str], max_rss_mb: float = 0.0) -> None:
        from cosyvoice.bootstrap import build, preload_optional, preload_required
        from cosyvoice.lifecycle.gate import SynthesisGate
        from cosyvoice.server.admin import AdminActions
        from cosyvoice.server.api import Api
        from cosyvoice.server.health import AppState
        from cosyvoice.settings import Settings, resolve_device

        settings = Settings.from_args(app_args)
        settings.ensure_dirs()
        self.settings = settings
        self.max_rss_mb = float(max_rss_mb)
        self.state = AppState()
        self.services = build(settings, resolve_device(settings.device),
                              tracker=self.state.requests)
        self.manager = self.services.manager
        # Serve sends at most max_ongoing_requests (= --concurrency) at once, so this gate
        # never refuses; it keeps the request tracker's counts behind /metrics.
        self.gate = SynthesisGate(settings.concurrency, settings.queue_size,
                                  self.state.requests)
        self.api = Api(self.services.synth, self.gate)
        self.admin = AdminActions(self.manager, self.state, settings)
        self.name = replica_name()
        if settings.preload:
            preload_required(self.services)
        self.state.loading_done.set()
        if settings.preload:
            preload_optional(self.services)
        self.reload_token = None
        logger.info("synthesis replica %s ready (pid %d)", self.name, os.getpid())

    # ---- synthesis -------------------------------------------------------------------
    def _request(self, job: Job) -> SynthesisRequest:
        req = SynthesisRequest(**job.request)
        if job.prompt is not None:
            cache = Path(self.settings.cache_dir) / "uploads"
            cache.mkdir(parents=True, exist_ok=True)
            path = Path(tempfile.mkdtemp(prefix="prompt-", dir=cache)) / safe_upload_name(
                job.prompt_name)
            path.write_bytes(job.prompt)
            req.prompt_path = str(path)
        return req

    @staticmethod
    def _discard(req: SynthesisRequest) -> None:
        if req.prompt_path:
            discard_upload(Path(req.prompt_path))

    def _headers(self, response: Response) -> dict[str, str]:
        headers = {k: v for k, v in response.headers.items()
                   if k.lower() not in ("content-length", "content-type")}
        headers[REPLICA_HEADER] = self.name
        return headers

    def full(self, job: Job) -> Answer:
        """The whole audio in the job's format (the app's ``Api.full``)."""
        req = self._request(job)
        try:
            response = self.api.full(req, job.format, job.timestamps)
        finally:
            self._discard(req)
        headers = self._headers(response)
        output = headers.pop("x-output-file", None)
        if output:  # the client gets the audio (and its cues); keep nothing on this node
            audio = Path(self.settings.outputs_dir) / output
            for path in (audio, audio.with_suffix(".srt"), audio.with_suffix(".vtt")):
                path.unlink(missing_ok=True)
        return Answer(bytes(response.body), response.media_type, headers)

    async def stream(self, job: Job) -> AsyncIterator[object]:
        """Chunked audio (the app's ``Api.streaming``): first a dict with the media type
        and headers — sent only once the first sentence is rendered, so a bad request
        fails before the client gets a 200 — then the audio bytes."""
        req = self._request(job)
        try:
            response = await run_in_threadpool(self.api.streaming, req, job.format)
        finally:
            self._discard(req)  # the prompt is read before the first chunk
        yield {"media_type": response.media_type, "headers": self._headers(response)}
        async for chunk in response.body_iterator:
            yield chunk

    # ---- health, state, reload --------------------------------------------------------
    def check_health(self) -> None:
        """Serve's health check: raise (so Serve replaces this replica) unless the app's
        readiness rule holds and the process is under its memory bound."""
        from cosyvoice.lifecycle.resources import rss_bytes
        from cosyvoice.server.health import readiness

        ok, status = readiness(self.manager, self.state)
        if not ok:
            raise RuntimeError(f"replica {self.name} not ready: {status}")
        rss_mb = rss_bytes() / 2**20
        if self.max_rss_mb > 0 and rss_mb > self.max_rss_mb:
            raise RuntimeError(f"replica {self.name} uses {rss_mb:.0f} MB RSS, over its "
                               f"bound of {self.max_rss_mb:.0f} MB")

    def ready_report(self) -> dict:
        """The body of ``/health/ready`` for this replica."""
        from cosyvoice.server.health import readiness

        ok, status = readiness(self.manager, self.state)
        models = self.manager.states()
        return {"ready": ok, "status": status, "pid": os.getpid(), "replica": self.name,
                "loads_on_first_use": [m["name"] for m in models
                                       if m["required"] and m["state"] == "UNLOADED"],
                "models": models, "engines": self.services.synth.engine_states()}

    def reload(self) -> dict:
        """Rebuild every loaded model, each swapped in only on success (the app's soft
        reload): requests keep running on the old instances meanwhile."""
        return {"replica": self.name, **self.admin.reload_models()}

    def reconfigure(self, config: dict) -> None:
        """Serve's ``user_config`` hook. A changed ``reload`` value reloads the models;
        Serve applies a user_config change replica by replica (a rolling reload)."""
        token = (config or {}).get("reload")
        if self.reload_token is not None and token != self.reload_token:
            report = self.reload()
            logger.info("reload %r on %s: %s", token, self.name, report)
        self.reload_token = token

    def metrics_text(self) -> tuple[str, str]:
        """``(replica, its /metrics)``: the app's collector, in Prometheus text format."""
        from prometheus_client import generate_latest

        from cosyvoice.server.metrics import build_registry

        tracker = self.state.requests
        registry = build_registry(self.manager, self.state, self.settings,
                                  lambda: max(self.gate.depth - tracker.in_flight, 0))
        return self.name, generate_latest(registry).decode()
