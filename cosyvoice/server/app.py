"""Assemble the FastAPI app: health routes plus the Gradio UI mounted at ``/``."""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI

from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.pipeline import Synthesizer
from cosyvoice.server.health import AppState, health_router
from cosyvoice.server.ui import build_ui


def create_app(manager: ModelManager, synth: Synthesizer, state: AppState) -> FastAPI:
    settings = synth.settings
    app = FastAPI(title="CosyVoice WebUI", version="0.1.0")
    app.include_router(health_router(manager, state))
    demo = build_ui(synth)
    max_mb = settings.max_upload_mb
    return gr.mount_gradio_app(
        app, demo, path="/", root_path=settings.root_path or None,
        allowed_paths=[str(settings.outputs_dir)], max_file_size=f"{max_mb:g}mb",
        footer_links=["api", "settings"],
    )
