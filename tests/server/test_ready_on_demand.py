"""A required model unloaded by an admin (issue #23, 6): the app stays ready, says which
model loads on first use, and the next request loads it and succeeds — /health/ready,
the models API and the panel's table agree (the real app, ``running_app``)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("model, body", [  # voices that use the unloaded model
    ("acoustic_en", {"text": "Loaded again on first use.", "voice": "joe"}),
    ("vocoder", {"text": "你好，世界。", "voice": "joe"}),
    ("acoustic_zh", {"text": "今天天气很好。", "voice": "baker"}),
])
def test_unloaded_required_model_loads_on_first_use(running_app, model, body):
    url = running_app.url
    # The shared app may have had idle models unloaded by an earlier test (/admin/unload):
    # start from every required model READY, so the one unloaded here is the only one.
    for name in httpx.get(url + "/health/ready", timeout=10).json()["loads_on_first_use"]:
        assert httpx.post(url + f"/api/v1/models/{name}/load", timeout=300).status_code == 200
    r = httpx.post(url + f"/api/v1/models/{model}/unload", timeout=120)
    assert r.status_code == 200 and r.json()["model"]["state"] == "UNLOADED"
    assert r.json()["model"]["required"] is True
    ready = httpx.get(url + "/health/ready", timeout=10)
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"] == "ready" and ready.json()["loads_on_first_use"] == [model]
    tts = httpx.post(url + "/api/v1/tts", json=body, timeout=300)
    assert tts.status_code == 200, tts.text[:300]
    after = httpx.get(url + "/health/ready", timeout=10).json()
    assert after["loads_on_first_use"] == []
    assert {m["name"]: m["state"] for m in after["models"]}[model] == "READY"
