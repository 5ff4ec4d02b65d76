"""CosyVoice WebUI entry point: settings → ModelManager → UI + API → serve on 0.0.0.0:7860.

    python app.py --help
"""

from __future__ import annotations

import gc
import logging
import logging.handlers
import os
import sys
import threading
import time

from cosyvoice.settings import Settings, resolve_device

logger = logging.getLogger("cosyvoice.app")


def setup_logging(settings: Settings) -> None:
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler = logging.handlers.RotatingFileHandler(
        settings.log_dir / "cosyvoice.log", maxBytes=10 * 2**20, backupCount=3,
        encoding="utf-8")
    handler.setFormatter(fmt)
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(fmt)
    root = logging.getLogger()
    root.setLevel(settings.log_level.upper())
    root.handlers[:] = [handler, console]


def main(argv: list[str] | None = None) -> int:
    settings = Settings.from_args(argv)
    settings.ensure_dirs()
    setup_logging(settings)
    os.environ.setdefault("GRADIO_TEMP_DIR", str(settings.cache_dir / "gradio"))
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

    import psutil
    import torch

    from cosyvoice.bootstrap import build, preload_optional, preload_required
    from cosyvoice.lifecycle.drain import serve
    from cosyvoice.lifecycle.pidfile import PidFile
    from cosyvoice.lifecycle.restarts import RestartLog
    from cosyvoice.server.app import create_app
    from cosyvoice.server.health import AppState

    try:
        device = resolve_device(settings.device)
    except ValueError as e:
        logger.error("%s", e)
        return 2
    if settings.torch_threads > 0:
        torch.set_num_threads(settings.torch_threads)
    if settings.malloc_arenas > 0:  # see cosyvoice.lifecycle.resources: RSS steps
        from cosyvoice.lifecycle.resources import limit_malloc_arenas

        limit_malloc_arenas(settings.malloc_arenas)
    pidfile = PidFile(settings.pidfile)
    if not pidfile.acquire():
        logger.error("another instance holds %s (pid %s); stop it first", settings.pidfile,
                     pidfile.read_pid())
        return 1
    state = AppState()
    # A drain's Retry-After counts on the next restart taking as long as the last ones.
    state.requests.relaunch_s = RestartLog.for_settings(settings).relaunch_estimate_s
    try:
        services = build(settings, device, tracker=state.requests)
    except ValueError as e:  # an unknown or broken engine
        logger.error("%s", e)
        pidfile.release()
        return 2
    manager, synth = services.manager, services.synth
    app = create_app(manager, synth, state)
    # What exists now (modules, the app and its routes: ~530k objects) lives as long as the
    # process: out of the cyclic collector's sight, a full collection (an unload's, a
    # reload's) walks the models' objects only — 0.23 s → 0.000 s measured on 2 Zen 4
    # cores, load 5; it held the GIL, so /health/live waited. Models load after this line,
    # so what an unload frees is still collected.
    gc.freeze()

    def preload() -> None:  # required models in parallel, warm-up, ready, optional ones
        if settings.preload:
            preload_required(services)
        # Start to ready, measured: before any restart is recorded, a drain's Retry-After
        # counts on the next start taking about as long.
        state.requests.startup_s = time.time() - psutil.Process().create_time()
        state.loading_done.set()
        if settings.preload:  # optional ones: a CosyVoice folder, the speaker encoder
            preload_optional(services)
        logger.info("models: %s", {m["name"]: m["state"] for m in manager.states()})

    threading.Thread(target=preload, name="preload", daemon=True).start()
    logger.info("serving on http://%s:%d (device %s, pid %d)", settings.host, settings.port,
                device, os.getpid())
    try:
        serve(app, settings.host, settings.port, state.requests, settings.drain_timeout_s,
              settings.drain_linger_s)
    finally:
        pidfile.release()
    return 0


if __name__ == "__main__":
    code = main()
    # The server has drained and the pidfile is released: flush logs and leave without the
    # interpreter's teardown (about 1 s of torch/gradio finalizers; restart.sh clears the
    # cache folder anyway), which would otherwise add to every restart.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
