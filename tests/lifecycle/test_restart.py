"""Hard restarts for real: restart.sh, the Restart button's endpoint, and the watchdog.

One instance per module, on a free port with its own temporary pidfile and folders,
started by restart.sh itself (nothing running yet). Models are not preloaded
(``--no-preload``): these tests are about processes, not synthesis, and it keeps each
restart to a few seconds. Only processes started here are ever signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest
from gradio_client import Client

from tests.conftest import ROOT, free_port, get_json
from tests.process_tools import AppInstance, alive, cmdline

pytestmark = pytest.mark.slow


@dataclass
class Instance(AppInstance):
    foreign: subprocess.Popen  # a live process named by a stale pidfile: never ours to stop
    first_run: subprocess.CompletedProcess | None = None

    ready_timeout_s = 120

    def extra_args(self) -> list[str]:
        return ["--no-preload", "--restart-cooldown-s", "0", "--drain-timeout-s", "10"]


@pytest.fixture(scope="module")
def inst(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("restart")
    (workdir / "run").mkdir()
    # A stale pidfile naming a live process that is not ours to stop: restart.sh must
    # see that it is not this install's app.py and leave it alone.
    foreign = subprocess.Popen(["sleep", "600"])
    (workdir / "run" / "app.pid").write_text(f"{foreign.pid}\n")
    inst = Instance(workdir, free_port(), foreign)
    inst.first_run = inst.restart_sh(timeout=180)
    yield inst
    inst.stop()
    foreign.kill()
    foreign.wait()


def test_restart_sh_when_nothing_runs_just_starts_it(inst):
    out = inst.first_run.stdout + inst.first_run.stderr
    assert inst.first_run.returncode == 0, out
    assert "not running; starting it" in out and "restart done" in out
    assert inst.foreign.poll() is None, "restart.sh signalled a process that is not the app"
    status, body = get_json(inst.url + "/health/ready")
    assert status == 200 and body["pid"] == inst.pid() != inst.foreign.pid
    assert str(ROOT / "app.py") in cmdline(body["pid"])
    when, reason, pid, stop_s, relaunch_s = inst.restarts()[-1]
    assert [reason, pid, stop_s] == ["manual", "-", "-"]
    assert 0 < float(relaunch_s) < 300  # start → ready: what a drain's Retry-After learns
    assert "restart done" in (inst.workdir / "logs" / "restart.log").read_text()


def test_run_sh_watchdog_flag_starts_one_watchdog(inst):
    wpid_file = inst.workdir / "run" / "watchdog.pid"
    cmd = ["bash", str(ROOT / "run.sh"), "--watchdog", "--", *inst.app_args()]
    first = subprocess.run(cmd, cwd=ROOT, env=inst.env, capture_output=True, text=True,
                           timeout=60)
    assert first.returncode == 0 and "already running" in first.stdout, first.stdout
    deadline = time.time() + 30
    while time.time() < deadline and not (wpid_file.exists() and wpid_file.read_text().strip()):
        time.sleep(0.2)
    wpid = int(wpid_file.read_text())
    try:
        assert "cosyvoice.lifecycle.watchdog" in cmdline(wpid)
        second = subprocess.run(cmd, cwd=ROOT, env=inst.env, capture_output=True,
                                text=True, timeout=60)
        assert "watchdog already running" in second.stdout
    finally:
        os.kill(wpid, signal.SIGTERM)
        deadline = time.time() + 15
        while alive(wpid) and time.time() < deadline:
            time.sleep(0.2)
    assert not alive(wpid) and not wpid_file.exists()


def assert_restart_line(fields: list[str], reason: str, old_pid: int) -> None:
    """restarts.log's line of a restart that stopped ``old_pid``: the time SIGTERM → gone
    and gone → the new app ready, both measured."""
    assert fields[1:3] == [reason, str(old_pid)], fields
    stop_s, relaunch_s = float(fields[3]), float(fields[4])
    assert 0 <= stop_s < 60 and 0 < relaunch_s < 300, fields


def wait_restart_finished(inst: Instance, timeout: float = 30) -> None:
    """Until the previous restart.sh has let go of its lock."""
    from cosyvoice.server.admin import restart_running

    deadline = time.time() + timeout
    while restart_running(inst.workdir / "run" / "restart.lock"):
        assert time.time() < deadline, "restart.sh still holds its lock"
        time.sleep(0.1)


def test_page_has_models_tab_restart_confirmation_and_poll_js(inst):
    status, config = get_json(inst.url + "/config")
    assert status == 200
    elem_ids = {c.get("props", {}).get("elem_id") for c in config["components"]}
    assert {"models-tab", "models-table", "restart-app", "restart-confirm", "keep-outputs",
            "restart-yes"} <= elem_ids
    js = [d.get("js") or "" for d in config["dependencies"]]
    assert any("health/ready" in j and "location.reload()" in j for j in js)


def test_admin_routes_over_http(inst):
    import json
    import urllib.request

    status, body = get_json(inst.url + "/admin/models")
    assert status == 200 and body["token_required"] is False
    assert {m["name"] for m in body["models"]} >= {"vocoder", "acoustic_en"}
    for path in ("/admin/reload", "/admin/unload"):
        req = urllib.request.Request(inst.url + path, data=b"{}", method="POST",
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200 and isinstance(json.load(r), dict)


def _button_restart(inst: Instance, keep: bool) -> tuple[int, int, str]:
    """What the Restart button's confirm event does, called through gradio_client."""
    wait_restart_finished(inst)
    old = inst.pid()
    client = Client(inst.url, verbose=False)
    status, old_pid_text = client.predict("", keep, "en", api_name="/admin_restart")
    t0 = time.time()
    new = inst.wait_new_ready(old)
    return old, new, f"{status} | {old_pid_text} | {time.time() - t0:.1f} s"


def test_button_restart_clears_outputs_and_cache(inst):
    (inst.outputs / "earlier.wav").write_bytes(b"RIFF0000")
    (inst.cache / "upload-junk.bin").write_bytes(b"x" * 100)
    old, new, info = _button_restart(inst, keep=False)
    assert new != old and not alive(old), info
    assert str(old) in info and "Restarting" in info
    assert not (inst.outputs / "earlier.wav").exists()
    assert not (inst.cache / "upload-junk.bin").exists()
    wait_restart_finished(inst)  # restart.sh writes its line once the new app is ready
    assert_restart_line(inst.restarts()[-1], "button", old)
    text = open_metrics(inst)
    assert 'cosyvoice_restarts_total{reason="button"} 1.0' in text


def test_button_restart_keeps_outputs_when_asked(inst):
    (inst.outputs / "keep-me.wav").write_bytes(b"RIFF0000")
    old, new, info = _button_restart(inst, keep=True)
    assert new != old, info
    assert (inst.outputs / "keep-me.wav").read_bytes() == b"RIFF0000"
    wait_restart_finished(inst)
    assert_restart_line(inst.restarts()[-1], "button", old)


def test_restart_sh_finds_the_app_when_its_pidfile_is_gone(inst):
    wait_restart_finished(inst)
    old = inst.pid()
    inst.pidfile.unlink()
    done = subprocess.run(["bash", str(ROOT / "restart.sh"), "--keep-outputs"], cwd=ROOT,
                          env=inst.env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"stopping pid {old}" in done.stdout and not alive(old)
    assert inst.wait_new_ready(old) == inst.pid()
    assert inst.foreign.poll() is None


def test_watchdog_restarts_a_frozen_app(inst):
    wait_restart_finished(inst)
    old = inst.pid()
    log_file = inst.workdir / "logs" / "watchdog.log"
    restart_cmd = f"bash {ROOT / 'restart.sh'} --reason watchdog --keep-outputs"
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "cosyvoice.lifecycle.watchdog", "--url", inst.url,
         "--interval-s", "0.5", "--timeout-s", "1", "--failures", "3", "--grace-s", "0",
         "--cooldown-s", "600", "--restart-cmd", restart_cmd,
         "--pidfile", str(inst.workdir / "run" / "watchdog.pid"), "--log-file", str(log_file)],
        cwd=ROOT, env=inst.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)  # a few healthy polls first
        os.kill(old, signal.SIGSTOP)  # frozen: the port accepts, nothing answers
        new = inst.wait_new_ready(old, timeout=120)
        assert not alive(old)
    finally:
        if alive(old):
            os.kill(old, signal.SIGCONT)
        watchdog.send_signal(signal.SIGTERM)
        assert watchdog.wait(30) == 0
    log = log_file.read_text()
    assert "liveness failed (1/3)" in log and "liveness failed (3/3)" in log
    assert "restarting the app: no answer to 3 liveness polls" in log
    assert "restart command exited 0" in log
    wait_restart_finished(inst)
    assert_restart_line(inst.restarts()[-1], "watchdog", old)
    assert new == inst.pid()


def open_metrics(inst: Instance) -> str:
    import urllib.request

    with urllib.request.urlopen(inst.url + "/metrics", timeout=5) as r:
        return r.read().decode()
