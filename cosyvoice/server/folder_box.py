"""The models panel's folder box: point a folder model (a CosyVoice engine) at a released
folder on the server and load it. Shown only when the app serves such a model. A bad folder
shows its FAILED reason; the other engines keep serving."""

from __future__ import annotations

from typing import Any

import gradio as gr

from cosyvoice.server.texts import t
from cosyvoice.server.ui_lang import Relabel


def build_folder_box(actions: Any, token: gr.Textbox, lang_in: list, status: gr.Markdown,
                     table: gr.Dataframe, relabel: Relabel | None = None) -> None:
    """Render the box inside the caller's Models tab (nothing when no model takes a folder);
    its texts are registered with ``relabel`` for the language switch."""
    from cosyvoice.server.admin import _ui_call, is_proxied, model_rows

    manager = actions.manager
    names = manager.folder_models()
    if not names:
        return
    L = relabel or Relabel()
    with gr.Row():
        model = L(gr.Dropdown(names, value=names[0], label=t("folder_model"), scale=1,
                              elem_id="folder-model"), label="folder_model")
        path = L(gr.Textbox(manager.location(names[0]) or "", label=t("folder_path"),
                            max_length=1000, scale=3, elem_id="folder-path"),
                 label="folder_path")
        load = L(gr.Button(t("load_folder"), scale=1, elem_id="load-folder"),
                 value="load_folder")

    def on_load(name: str, folder: str, tok: str, lg: str, request: gr.Request):
        try:
            out = _ui_call(actions.load_folder, tok, name, folder,
                           is_proxied(request.headers))
        finally:
            rows = model_rows(manager, lg)  # FAILED with its reason when the load failed
        return t("folder_loaded", lg).format(name=name, path=out["location"]), gr.update(
            value=rows)

    model.change(lambda name: manager.location(name) or "", model, path, api_name=False,
                 queue=False)
    load.click(on_load, [model, path, token, *lang_in], [status, table],
               api_name="admin_load_folder", queue=False, show_progress="minimal")
