"""AdminActions: token rules, restart cooldown across lifetimes, reload/unload reports."""

from __future__ import annotations

import stat
import time

import pytest
import torch

from cosyvoice.errors import BusyError
from cosyvoice.lifecycle.manager import ModelManager, ModelSpec
from cosyvoice.lifecycle.restarts import RestartLog
from cosyvoice.server.admin import AdminActions
from cosyvoice.server.admin_auth import AdminError, is_loopback
from cosyvoice.server.health import AppState, readiness
from cosyvoice.settings import Settings


class Flaky:
    def __init__(self) -> None:
        self.broken = False

    def __call__(self, device: str) -> torch.nn.Module:
        if self.broken:
            raise OSError("weights file truncated")
        return torch.nn.Linear(32, 32)


def _settings(tmp_path, **kw) -> Settings:
    return Settings(pidfile=tmp_path / "run" / "app.pid", log_dir=tmp_path / "logs",
                    outputs_dir=tmp_path / "out", cache_dir=tmp_path / "cache", **kw)


def _actions(tmp_path, loader=None, **kw) -> AdminActions:
    mgr = ModelManager("cpu", [ModelSpec("lin", loader or Flaky())])
    return AdminActions(mgr, AppState(), _settings(tmp_path, **kw))


@pytest.mark.parametrize("host, loop", [("127.0.0.1", True), ("::1", True),
                                        ("localhost", True), ("0.0.0.0", False),
                                        ("192.168.1.5", False), ("127.9.8.7", True),
                                        ("127.0.0.1.nip.io", False), ("127.evil", False)])
def test_loopback_detection(host, loop):
    assert is_loopback(host) is loop


def test_loopback_needs_no_token(tmp_path):
    actions = _actions(tmp_path, host="127.0.0.1")
    actions.check_token(None)
    assert not (tmp_path / "run" / "admin_token").exists()


def test_public_host_requires_the_generated_token(tmp_path):
    actions = _actions(tmp_path, host="0.0.0.0")
    path = tmp_path / "run" / "admin_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for bad in (None, "", "wrong"):
        with pytest.raises(AdminError, match="admin token"):
            actions.reload(bad)
    actions.check_token(path.read_text().strip())
    # The same token after a restart (a new process reads the same file).
    again = _actions(tmp_path, host="0.0.0.0")
    again.check_token(path.read_text().strip())


def test_configured_token_wins(tmp_path):
    actions = _actions(tmp_path, host="0.0.0.0", admin_token="s3cret")
    actions.check_token("s3cret")
    with pytest.raises(AdminError):
        actions.unload_idle("nope")


def test_restart_cooldown_reads_the_restart_log(tmp_path):
    actions = _actions(tmp_path, host="127.0.0.1", restart_cooldown_s=60)
    RestartLog.for_settings(actions.settings).record("cron", 42)
    with pytest.raises(BusyError, match="please try again in"):
        actions.restart(None, keep_outputs=True)
    actions.state.draining.set()
    with pytest.raises(BusyError, match="already in progress"):
        actions._check_cooldown()


def test_failed_reload_keeps_serving_and_is_reported(tmp_path):
    loader = Flaky()
    actions = _actions(tmp_path, loader=loader, host="127.0.0.1")
    old = actions.manager.get("lin")
    actions.state.loading_done.set()
    loader.broken = True
    out = actions.reload(None)
    assert out["reloaded"] == [] and "truncated" in out["failed"]["lin"]
    assert actions.manager.get("lin") is old
    assert readiness(actions.manager, actions.state) == (True, "ready")
    loader.broken = False
    out = actions.reload(None)
    assert out["reloaded"] == ["lin"] and actions.manager.get("lin") is not old


def test_unload_idle_only_unloads_idle_models(tmp_path):
    actions = _actions(tmp_path, host="127.0.0.1", idle_unload_s=0.2)
    actions.manager.get("lin")
    assert actions.unload_idle(None) == []
    time.sleep(0.25)
    reports = actions.unload_idle(None)
    assert [r["name"] for r in reports] == ["lin"] and reports[0]["freed"] is True
    state = next(m for m in actions.manager.states() if m["name"] == "lin")["state"]
    assert state == "UNLOADED"
    actions.state.loading_done.set()
    assert readiness(actions.manager, actions.state)[0] is True  # loads again on use


def test_clear_preview_counts_what_a_restart_deletes(tmp_path):
    actions = _actions(tmp_path, host="127.0.0.1")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.wav").write_bytes(b"x" * 2048)
    (out / ".gitkeep").write_text("")
    (tmp_path / "cache" / "gradio").mkdir(parents=True)
    (tmp_path / "cache" / "gradio" / "up.mp3").write_bytes(b"y" * 10)
    p = actions.clear_preview()
    assert p["out_files"] == 1 and p["cache_files"] == 1
    assert p["out_mb"] == pytest.approx(2048 / 2**20)


def test_restart_refused_while_restart_sh_holds_its_lock(tmp_path):
    import fcntl
    import os

    actions = _actions(tmp_path, host="127.0.0.1", restart_cooldown_s=0)
    lock = tmp_path / "run" / "restart.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what `flock -n 9` in restart.sh holds
    try:
        with pytest.raises(BusyError, match="still finishing"):
            actions.restart(None, keep_outputs=True)
    finally:
        os.close(fd)
    actions._check_cooldown()  # free again


def test_models_table_says_an_unloaded_model_loads_on_first_use(tmp_path):
    from cosyvoice.server.ui_models import model_rows

    actions = _actions(tmp_path, host="127.0.0.1")
    actions.manager.get("lin")
    assert "loads on first use" not in model_rows(actions.manager)[0][-1]
    actions.manager.unload("lin")
    for lang, words in (("en", "loads on first use"), ("zh", "首次使用时自动加载")):
        row = model_rows(actions.manager, lang)[0]
        assert row[1] == "UNLOADED" and words in row[-1], row


def test_cooldown_retry_after_is_the_number_in_the_message(tmp_path):
    import re

    from cosyvoice.server.errors import cosy_error_response

    actions = _actions(tmp_path, host="127.0.0.1", restart_cooldown_s=60)
    RestartLog.for_settings(actions.settings).record("cron", 42)
    with pytest.raises(BusyError) as info:
        actions.restart(None, keep_outputs=True)
    n = int(re.search(r"try again in (\d+) s", str(info.value)).group(1))
    assert 55 <= n <= 60 and info.value.retry_after_s == n
    response = cosy_error_response(info.value)
    assert response.status_code == 503 and response.headers["retry-after"] == str(n)
