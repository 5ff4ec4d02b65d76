"""The bad-input catalogue for model folders (issue #35 item 2), against the real app: each
hostile folder of tests/hostile_folders.py is loaded through ``POST
/api/v1/models/cosyvoice3/load`` while ``/health/live`` is polled — every answer within 1 s —
and ends FAILED with a reason naming the file and what is wrong; the app stays ready and the
offline engine still speaks. A hostile folder loaded over a READY model leaves the old one
serving. (Before the fix, ``boom: !ref 9 ** 9 ** 9`` stopped every route and SIGTERM:
bench/hostile_folder.py.)"""

from __future__ import annotations

import shutil
import threading
import time
from urllib.parse import unquote

import httpx
import pytest

from tests.conftest import get_json, start_cosyvoice_app, stop_app
from tests.hostile_folders import VARIANTS, make_hostile

pytestmark = pytest.mark.slow

LIVE_LIMIT_S = 1.0
SPEAK_AFTER = {"power_tower", "alias_bomb", "ref_bomb", "yaml_is_fifo", "huge_document"}


@pytest.fixture(scope="module")
def cv_app(tmp_path_factory, cv_folder_v3):
    app = start_cosyvoice_app(tmp_path_factory.mktemp("bad-folders-app"), cv_folder_v3)
    yield app
    stop_app(app)


def _admin(app, action: str, body: dict | None = None) -> httpx.Response:
    return httpx.post(f"{app.url}/api/v1/models/cosyvoice3/{action}", json=body, timeout=120)


def _engine(app, name: str) -> dict:
    _, body = get_json(app.url + "/api/v1/engines")
    return next(e for e in body["engines"] if e["name"] == name)


def _load_watching_live(app, folder) -> tuple[httpx.Response, list[float]]:
    """Load ``folder`` from a thread; poll /health/live until the load answers (and for 1 s
    at least). The response and every poll's seconds."""
    out: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: out.append(
        _admin(app, "load", {"model_dir": str(folder)})))
    t0 = time.monotonic()
    thread.start()
    polls = []
    while thread.is_alive() or time.monotonic() - t0 < 1.0:
        start = time.perf_counter()
        r = httpx.get(app.url + "/health/live", timeout=30)
        polls.append(time.perf_counter() - start)
        assert r.status_code == 200
        time.sleep(0.05)
    thread.join()
    return out[0], polls


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_hostile_folder_fails_while_the_app_stays_live(cv_app, cv_folder_v3, tmp_path,
                                                          variant):
    folder = make_hostile(cv_folder_v3, tmp_path / "bad", variant)
    assert _admin(cv_app, "unload").status_code == 200
    r, polls = _load_watching_live(cv_app, folder)
    assert max(polls) < LIVE_LIMIT_S, f"/health/live took {max(polls):.2f} s ({len(polls)} polls)"
    assert r.status_code == 503
    message = r.json()["error"]["message"]
    engine = _engine(cv_app, "cosyvoice3")
    assert engine["state"] == "FAILED", engine
    for text in (message, engine["reason"]):
        assert "cosyvoice3.yaml" in text, text
        for word in VARIANTS[variant]:
            assert word in text.lower(), f"{word!r} not in {text!r}"
    status, ready = get_json(cv_app.url + "/health/ready")
    assert status == 200 and ready["ready"] is True
    if variant in SPEAK_AFTER:
        spoken = httpx.post(cv_app.url + "/api/v1/tts", json={"text": "Hello there."},
                            timeout=300)
        assert spoken.status_code == 200 and len(spoken.content) > 10_000
        assert "cosyvoice3.yaml" in unquote(spoken.headers["X-CosyVoice-Notes"])
    shutil.rmtree(folder)


def test_a_hostile_folder_over_a_ready_model_leaves_it_serving(cv_app, cv_folder_v3,
                                                               tmp_path):
    r = _admin(cv_app, "load", {"model_dir": str(cv_folder_v3)})
    assert r.status_code == 200 and r.json()["model"]["state"] == "READY"
    r, polls = _load_watching_live(cv_app, make_hostile(cv_folder_v3, tmp_path / "bad",
                                                        "power_tower"))
    assert max(polls) < LIVE_LIMIT_S and r.status_code == 503
    _, models = get_json(cv_app.url + "/api/v1/models")
    model = next(m for m in models["models"] if m["name"] == "cosyvoice3")
    assert model["state"] == "READY" and "previous instance still serving" in model["reason"]
    assert "exponent" in model["reason"] and model["location"] == str(cv_folder_v3)
    spoken = httpx.post(cv_app.url + "/api/v1/tts", timeout=300, json={
        "text": "Hello.", "engine": "cosyvoice3", "voice": "tiny-male", "seed": 3})
    assert spoken.status_code == 200 and len(spoken.content) > 1000
