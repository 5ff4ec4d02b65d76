"""Assemble the FastAPI app: health, REST/OpenAI API, and the Gradio UI mounted at ``/``.

One :class:`SynthesisGate` admits syntheses from both the API and the UI, so the
concurrency limit and queue bound hold for the whole process.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

import gradio as gr
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from cosyvoice.lifecycle.drain import DrainGuard
from cosyvoice.lifecycle.gate import SynthesisGate
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.longform.jobs import JobStore
from cosyvoice.longform.runner import JobRunner
from cosyvoice.pipeline import Synthesizer
from cosyvoice.server.admin import AdminActions, admin_router
from cosyvoice.server.api import api_router
from cosyvoice.server.dialogue_api import dialogue_router
from cosyvoice.server.errors import (
    fallback_router,
    install_error_handlers,
    use_error_body_in_schema,
)
from cosyvoice.server.guards import install_guards
from cosyvoice.server.health import AppState, health_router
from cosyvoice.server.jobs_api import jobs_router
from cosyvoice.server.lexicon_api import lexicon_router
from cosyvoice.server.metrics import build_registry, gradio_queue_depth, metrics_router
from cosyvoice.server.models_api import models_router
from cosyvoice.server.transcribe_api import transcribe_router
from cosyvoice.server.ui import build_ui
from cosyvoice.server.voices_api import voices_router


def create_app(manager: ModelManager, synth: Synthesizer, state: AppState) -> FastAPI:
    settings = synth.settings
    gate = SynthesisGate(settings.concurrency, settings.queue_size, state.requests)
    # Batch jobs: one runner thread, started with the server (it waits for the models to be
    # ready) and stopped by a drain or shutdown; unfinished jobs on disk resume.
    runner = JobRunner(synth, gate, JobStore(settings.jobs_dir, settings.job_max_queued),
                       ready=state.loading_done)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        runner.start()
        try:
            yield
        finally:
            await run_in_threadpool(runner.stop, True, 5.0)

    app = FastAPI(title="CosyVoice WebUI", version="0.1.0", lifespan=lifespan)
    app.state.gate = gate
    install_error_handlers(app)
    app.add_middleware(DrainGuard, tracker=state.requests)
    install_guards(app, settings)  # outside the drain guard: origin, then body checks
    app.include_router(health_router(manager, state, synth.engine_states))
    app.include_router(api_router(synth, gate))
    app.include_router(dialogue_router(synth, gate))
    app.state.jobs = runner
    app.include_router(jobs_router(runner))
    admin = AdminActions(manager, state, settings)
    app.include_router(admin_router(admin))
    app.include_router(voices_router(synth, gate, runner))
    app.include_router(lexicon_router(synth.lexicon))
    app.include_router(transcribe_router(synth, gate))
    app.include_router(models_router(admin))
    demo = build_ui(synth, gate, admin, jobs=runner)
    ui_depth = gradio_queue_depth(demo)

    def queue_depth() -> int:  # waiting in Gradio's queue + admitted but not yet running
        return ui_depth() + max(gate.depth - state.requests.in_flight, 0)

    app.include_router(metrics_router(build_registry(manager, state, settings, queue_depth)))
    app.include_router(fallback_router(app, ("/api", "/v1", "/admin", "/health")))
    use_error_body_in_schema(app)
    max_mb = settings.max_upload_mb
    return gr.mount_gradio_app(
        app, demo, path="/", root_path=settings.root_path or None,
        allowed_paths=[str(settings.outputs_dir)], max_file_size=f"{max_mb:g}mb",
        footer_links=["api", "settings"],
    )
