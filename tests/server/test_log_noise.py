"""Log noise (issue #23, 11): an ordinary user error — empty text, an unspeakable script,
a file that is not audio, a bad field, an unparsable body — is one INFO line in the app
log and no traceback anywhere (the app's own log, nor its stdout/stderr, where Gradio
prints one for every ``gr.Error`` unless told not to). Through the UI's Gradio API and
REST, against the real app."""

from __future__ import annotations

import httpx
import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from tests.conftest import RunningApp

pytestmark = pytest.mark.slow


def _ui(client: Client, **kw):
    args = {"mode": "preset", "text": "Hello there.", "voice": "joe", "prompt": None,
            "prompt_text": "", "speed": 1.0, "seed": None, "strength": 1.0, **kw}
    return client.predict(*args.values(), api_name="/generate")


def _logs(app: RunningApp) -> tuple[str, str]:
    return ((app.workdir / "logs" / "cosyvoice.log").read_text(encoding="utf-8"),
            (app.workdir / "app.stdout.log").read_text(encoding="utf-8", errors="replace"))


def test_user_errors_are_one_info_line_without_traceback(running_app, tmp_path):
    notes = tmp_path / "notes.wav"
    notes.write_text("not audio at all\n" * 30)
    log0, out0 = _logs(running_app)
    client = Client(running_app.url, verbose=False)
    ui_cases = [{"text": ""}, {"text": "Привет, как дела?"},
                {"mode": "clone", "prompt": handle_file(str(notes))}]
    for kw in ui_cases:
        with pytest.raises(AppError):
            _ui(client, **kw)
    url = running_app.url + "/api/v1/tts"
    rest = [httpx.post(url, json={"text": ""}, timeout=60),
            httpx.post(url, json={"text": "hi", "speed": 9}, timeout=60),
            httpx.post(url, content=b"[" * 50_000, timeout=60,
                       headers={"content-type": "application/json"}),
            httpx.post(url, data={"text": "hi", "mode": "clone"}, timeout=60,
                       files={"prompt": ("notes.wav", notes.read_bytes())})]
    assert [r.status_code for r in rest] == [422, 422, 400, 422]
    log1, out1 = _logs(running_app)
    new_log, new_out = log1[len(log0):], out1[len(out0):]
    assert "Traceback" not in new_log and "Traceback" not in new_out, new_out[-2000:]
    refused = [line for line in new_log.splitlines() if " refused" in line]
    assert len(refused) == len(ui_cases) + len(rest), refused
    assert all(" INFO " in line for line in refused), refused
    assert any("Cyrillic" in line for line in refused)
    assert any("nested too deeply" in line for line in refused)
    assert running_app.ready()

