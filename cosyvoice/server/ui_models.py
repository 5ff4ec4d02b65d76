"""The Models tab: each model's state, device and memory, the process readings, the damaged
files set aside, reload / unload idle / restart (with the browser side that waits for the
new process), and the folder box of a folder model (a CosyVoice engine). The actions are
:class:`~cosyvoice.server.admin.AdminActions`'."""

from __future__ import annotations

import html
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import gradio as gr
import psutil

from cosyvoice.errors import CosyVoiceError
from cosyvoice.lifecycle import resources
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.server.admin import AdminActions
from cosyvoice.server.admin_auth import is_proxied
from cosyvoice.server.health import AppState
from cosyvoice.server.texts import bilingual, t
from cosyvoice.server.ui_lang import Relabel
from cosyvoice.settings import Settings
from cosyvoice.state_files import set_aside_files

logger = logging.getLogger(__name__)

REFRESH_S = 3.0
READY_POLL_TIMEOUT_S = 180
MAX_SET_ASIDE_SHOWN = 5  # the newest damaged files named on the Models tab


# ---- readings for the panel ----------------------------------------------------------

def model_rows(manager: ModelManager, lang: str = "en") -> list[list[Any]]:
    """The Models table; an unloaded model's note says it loads on first use (the app
    stays ready meanwhile, as /health/ready does)."""
    return [[m["name"], m["state"], m["device"] or "-", m["memory_mb"], m["load_seconds"],
             "-" if m.get("idle_s") is None else m["idle_s"], _note(m, lang)]
            for m in manager.states()]


def _note(m: dict[str, Any], lang: str) -> str:
    if m["state"] == "UNLOADED":
        return t("loads_on_first_use", lang).format(what=m["description"])
    return m["reason"] or m["description"]


def model_headers(lang: str) -> list[str]:
    keys = ("col_model", "col_state", "col_device", "col_memory", "col_load", "col_idle",
            "col_note")
    return [t(k, lang) for k in keys]


def system_line(actions: AdminActions, lang: str, proc: psutil.Process) -> str:
    alloc = resources.cuda_allocator()
    gpus = resources.gpu_readings()
    gpu_text = " · ".join(
        f"GPU {g['index']} {g['name']}: {g['used'] / 2**30:.1f} / {g['total'] / 2**30:.1f} GB"
        f" (app {g['process'] / 2**30:.2f} GB)" for g in gpus) or t("no_gpu", lang)
    uptime = int(time.time() - actions.state.started_at)
    line = t("system", lang).format(
        cpu=proc.cpu_percent(interval=None), rss=resources.rss_bytes() / 2**20,
        alloc=alloc["allocated"] / 2**20, reserved=alloc["reserved"] / 2**20, gpus=gpu_text,
        inflight=actions.state.requests.in_flight, uptime=f"{uptime // 60}m{uptime % 60:02d}s",
        restarts=len(actions.restart_log.entries()))
    return line + set_aside_line(lang)


def set_aside_line(lang: str) -> str:
    """The damaged files set aside (:mod:`cosyvoice.state_files`), as a paragraph; "" when
    none was."""
    items = set_aside_files()
    if not items:
        return ""

    def shown(path: str | None) -> str:
        return html.escape(f"{Path(path).parent.name}/{Path(path).name}") if path else "-"

    text = "; ".join(f"{i['what']} {shown(i['path'])} → {shown(i['moved_to'])} "
                     f"({html.escape(i['reason'])})" for i in items[-MAX_SET_ASIDE_SHOWN:])
    more = len(items) - MAX_SET_ASIDE_SHOWN
    text += f"; +{more}" if more > 0 else ""
    return "\n\n" + t("set_aside", lang).format(items=text.replace("`", "'"))


# ---- the Gradio tab ------------------------------------------------------------------

def _poll_js() -> str:
    """Browser side of the restart: overlay, poll /health/ready, reload on a new pid."""
    msgs = json.dumps({"wait": bilingual("restart_wait"), "fail": bilingual("restart_failed")},
                      ensure_ascii=False)
    return """(oldPid) => {
  if (!oldPid) { return []; }
  const msgs = __MSGS__;
  const base = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";
  const t0 = Date.now();
  let box = document.getElementById("cosyvoice-restart-overlay");
  if (!box) {
    box = document.createElement("div");
    box.id = "cosyvoice-restart-overlay";
    box.style.cssText = "position:fixed;inset:0;z-index:10000;display:flex;" +
      "align-items:center;justify-content:center;background:rgba(0,0,0,.6);" +
      "color:#fff;font-size:1.4em;text-align:center;padding:2em";
    document.body.appendChild(box);
  }
  const tick = async () => {
    const s = Math.round((Date.now() - t0) / 1000);
    try {
      const r = await fetch(base + "health/ready", {cache: "no-store"});
      const body = await r.json();
      if (r.ok && body.ready && String(body.pid) !== String(oldPid)) {
        box.textContent = msgs.wait + " ✓";
        location.reload();
        return;
      }
    } catch (e) { /* the old process is gone and the new one is not up yet */ }
    if (s > __TIMEOUT__) { box.textContent = msgs.fail; return; }
    box.textContent = msgs.wait + " " + s + " s";
    setTimeout(tick, 1000);
  };
  box.textContent = msgs.wait;
  setTimeout(tick, 1000);
  return [];
}""".replace("__MSGS__", msgs).replace("__TIMEOUT__", str(READY_POLL_TIMEOUT_S))


def build_models_panel(manager: ModelManager, state: AppState, settings: Settings, *,
                       actions: AdminActions | None = None,
                       lang: gr.components.Component | None = None,
                       relabel: Relabel | None = None) -> AdminActions:
    """Render the "Models" tab inside the caller's ``gr.Blocks``; returns its actions.
    ``lang``: the UI language radio its handlers read; ``relabel``: where its texts are
    registered for the language switch.

    The table and the system line are read on every page load (a callable value), so a
    page opened later shows the models as they are, not as they were at start.
    Admin events bypass the queue (``queue=False``) so they work when it is full.
    """
    actions = actions or AdminActions(manager, state, settings)
    L = relabel or Relabel()
    proc = psutil.Process(os.getpid())
    proc.cpu_percent(interval=None)  # first reading primes the counter
    lang_in = [lang] if lang is not None else [gr.State("en")]
    intro_text = lambda lg: t("models_intro", lg).format(idle=settings.idle_unload_s)  # noqa: E731
    with L(gr.Tab(t("tab_models"), id="models", elem_id="models-tab"), label="tab_models") as tab:
        L(gr.Markdown(intro_text("en")), value=intro_text)
        table = L(gr.Dataframe(lambda: model_rows(manager), headers=model_headers("en"),
                               interactive=False, label=t("models_table"),
                               elem_id="models-table"),
                  label="models_table", headers=model_headers)
        system = L(gr.Markdown(lambda: system_line(actions, "en", proc),
                               elem_id="system-readings"),
                   value=lambda lg: system_line(actions, lg, proc))
        token = L(gr.Textbox(label=t("admin_token"), type="password", max_length=200,
                             visible=actions.token_required, elem_id="admin-token"),
                  label="admin_token")
        with gr.Row():
            reload_btn = L(gr.Button(t("reload_models"), elem_id="reload-models"),
                           value="reload_models")
            unload_btn = L(gr.Button(t("unload_idle"), elem_id="unload-idle"),
                           value="unload_idle")
            restart_btn = L(gr.Button(t("restart_app"), variant="stop", elem_id="restart-app"),
                            value="restart_app")
        status = gr.Markdown("", elem_id="admin-status")
        build_folder_box(actions, token, lang_in, status, table, L)
        with gr.Group(visible=False, elem_id="restart-confirm") as confirm:
            what = gr.Markdown("")
            keep = L(gr.Checkbox(False, label=t("keep_outputs"), elem_id="keep-outputs"),
                     label="keep_outputs")
            with gr.Row():
                yes = L(gr.Button(t("restart_confirm"), variant="stop", elem_id="restart-yes"),
                        value="restart_confirm")
                no = L(gr.Button(t("cancel"), elem_id="restart-cancel"), value="cancel")
        old_pid = gr.Textbox("", visible="hidden", elem_id="restart-old-pid")
        timer = gr.Timer(REFRESH_S)

    def refresh(lg: str):
        return (gr.update(value=model_rows(manager, lg), headers=model_headers(lg)),
                system_line(actions, lg, proc))

    def on_open(request: gr.Request):
        """The token box shows when this visitor needs one (remote app, or a proxy)."""
        return gr.update(visible=actions.needs_token(is_proxied(request.headers)))

    def on_reload(tok: str, lg: str, request: gr.Request):
        out = _ui_call(actions.reload, tok, is_proxied(request.headers))
        text = t("reloaded", lg).format(ok=len(out["reloaded"]), seconds=out["seconds"])
        if out["failed"]:
            text += "\n\n" + t("reload_failed", lg).format(
                names=", ".join(out["failed"]), why="; ".join(out["failed"].values()))
        return text, gr.update(value=model_rows(manager, lg))

    def on_unload(tok: str, lg: str, request: gr.Request):
        reports = _ui_call(actions.unload_idle, tok, is_proxied(request.headers))
        if not reports:
            text = t("nothing_idle", lg).format(idle=settings.idle_unload_s)
        else:
            text = t("unloaded", lg).format(
                names=", ".join(r["name"] for r in reports),
                mb=sum(r.get("freed_rss_mb", 0.0) for r in reports),
                gpu_mb=sum(r.get("freed_cuda_allocated_mb", 0.0) for r in reports))
        return text, gr.update(value=model_rows(manager, lg))

    def on_ask(lg: str):
        return gr.update(visible=True), t("restart_what", lg).format(
            **actions.clear_preview())

    def on_confirm(tok: str, keep_outputs: bool, lg: str, request: gr.Request):
        out = _ui_call(actions.restart, tok, bool(keep_outputs), "button",
                       is_proxied(request.headers))
        text = t("restarting", lg).format(pid=out["old_pid"])
        return text, str(out["old_pid"]), gr.update(visible=False)

    common: dict[str, Any] = {"queue": False, "show_progress": "hidden"}
    timer.tick(refresh, lang_in, [table, system], api_name=False, **common)
    tab.select(on_open, None, token, api_name=False, **common)
    reload_btn.click(on_reload, [token, *lang_in], [status, table], api_name="admin_reload",
                     **common)
    unload_btn.click(on_unload, [token, *lang_in], [status, table], api_name="admin_unload",
                     **common)
    restart_btn.click(on_ask, lang_in, [confirm, what], api_name=False, **common)
    no.click(lambda: gr.update(visible=False), None, confirm, api_name=False, **common)
    yes.click(on_confirm, [token, keep, *lang_in], [status, old_pid, confirm],
              api_name="admin_restart", **common
              ).success(None, [old_pid], None, js=_poll_js(), api_name=False, **common)
    return actions


def _ui_call(fn, *args):
    """Run an admin action for the UI; typed errors become a visible gr.Error."""
    try:
        return fn(*args)
    except CosyVoiceError as e:
        logger.info("admin action %s refused: %s", fn.__name__, e)
        raise gr.Error(str(e), print_exception=False) from None




def build_folder_box(actions: Any, token: gr.Textbox, lang_in: list, status: gr.Markdown,
                     table: gr.Dataframe, relabel: Relabel | None = None) -> None:
    """Render the box inside the caller's Models tab (nothing when no model takes a folder);
    its texts are registered with ``relabel`` for the language switch."""
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
