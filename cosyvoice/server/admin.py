"""Admin actions — reload, unload idle, hard restart — as a Gradio "Models" tab and as
JSON routes under ``/admin``.

:class:`AdminActions` holds the logic (token check, restart cooldown, launching
restart.sh); the panel and the routes only translate its results and errors. An admin
token is required whenever the app listens beyond loopback, and for every request that
came through a reverse proxy (it carries ``Forwarded``, ``X-Forwarded-For`` or
``X-Real-IP``): a proxy on the same host connects from 127.0.0.1, but its clients may be
anyone.
"""

from __future__ import annotations

import fcntl
import hmac
import html
import json
import logging
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import gradio as gr
import psutil
from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse

from cosyvoice.errors import BusyError, CosyVoiceError, TextError
from cosyvoice.lifecycle import resources
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.lifecycle.restarts import RestartLog, launch_restart
from cosyvoice.server.folder_box import build_folder_box
from cosyvoice.server.health import AppState
from cosyvoice.server.texts import bilingual, t
from cosyvoice.server.ui_lang import Relabel
from cosyvoice.settings import Settings
from cosyvoice.state_files import DamagedFile, read_text, set_aside_files

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")
REFRESH_S = 3.0
READY_POLL_TIMEOUT_S = 180
MAX_SET_ASIDE_SHOWN = 5  # the newest damaged files named on the Models tab


class AdminError(CosyVoiceError):
    """Missing or wrong admin token."""

    http_status = 403


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def is_proxied(headers: Any) -> bool:
    """True when a request carries a reverse proxy's client headers (any value)."""
    return headers is not None and any(h in headers for h in PROXY_HEADERS)


def resolve_admin_token(settings: Settings) -> str:
    """The configured token, else one kept in ``<run dir>/admin_token`` (mode 0600).

    The file survives restarts, so a page opened before a restart keeps working.
    """
    if settings.admin_token:
        return settings.admin_token
    path = Path(settings.pidfile).parent / "admin_token"
    token = read_text(path, "admin token", _check_token)
    if token:
        return token
    token = secrets.token_urlsafe(24)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    logger.warning("admin token generated into %s (set --admin-token to choose one)", path)
    return token


def _check_token(text: str) -> str:
    """A kept token: one line of printable ASCII without spaces (as generated or typed)."""
    token = text.strip()
    if not token or len(token) > 256 or not all("!" <= c <= "~" for c in token):
        raise DamagedFile("not one line of printable characters")
    return token


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
        beyond loopback, or the request came through a proxy (``proxied``)."""
        if not self.needs_token(proxied):
            return
        with self._lock:
            if not self._token:  # loopback app, first proxied admin request
                self._token = resolve_admin_token(self.settings)
        if not token or not hmac.compare_digest(token.strip().encode(), self._token.encode()):
            why = ("the app listens beyond this machine" if self.token_required
                   else "the request came through a reverse proxy")
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


# ---- JSON routes ---------------------------------------------------------------------

def _token_from(x_admin_token: str | None, authorization: str | None) -> str | None:
    if x_admin_token:
        return x_admin_token
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:]
    return None


async def _restart_body(request: Request) -> bool:
    """``keep_outputs`` of an optional JSON body ``{"keep_outputs": bool}``; a body that
    is not that is refused (400 unparsable, 422 invalid), not silently ignored."""
    from cosyvoice.server.errors import read_json, validate_body
    from cosyvoice.server.models_api import RestartBody

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
        out = actions.restart(_token_from(x_admin_token, authorization), keep, "api",
                              proxied=is_proxied(request.headers))
        return JSONResponse(out, status_code=202)

    @router.post("/reload", responses=error_responses(400, 403, 422, 503),
                 dependencies=[Depends(json_object_or_empty)])
    def reload(request: Request, x_admin_token: str | None = Header(None),
               authorization: str | None = Header(None)) -> JSONResponse:
        """200 with the report; 503 (the error shape, plus the report) when a model failed
        to reload (it keeps serving its old instance)."""
        out = actions.reload(_token_from(x_admin_token, authorization),
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
        out = actions.unload_idle(_token_from(x_admin_token, authorization),
                                  proxied=is_proxied(request.headers))
        return JSONResponse({"unloaded": out})

    return router
