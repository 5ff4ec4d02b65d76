"""The scale-out path in every CI run: a local Ray cluster with one synthesis replica behind
the ingress answers readiness, a whole request, a streamed one (chunks before the end) and a
bad one (the one error shape). The two-replica suite (load spread, rolling reload, admin
token, metrics per replica) is tests/serving/test_ray_serve.py, marked ``ray_full``:
``pytest -m ray_full tests/serving``."""

from __future__ import annotations

import io
import time

import httpx
import pytest

pytest.importorskip("ray.serve")

import soundfile as sf  # noqa: E402

from tests.conftest import ROOT, free_port, get_json  # noqa: E402
from tests.serving.test_ray_serve import app_args  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_url(tmp_path_factory):
    import ray
    from ray import serve

    from cosyvoice.serving.deployments import build_app

    workdir = tmp_path_factory.mktemp("ray-smoke")
    port = free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}})
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(build_app({"app_args": app_args(workdir), "replicas": 1,
                             "replica_cpus": 1}), name="cosyvoice", route_prefix="/")
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()


def test_ready_speak_stream_and_refuse_through_ray(ray_url):
    status, body = get_json(ray_url + "/health/ready", timeout=60)
    assert status == 200 and body["ready"] is True, body

    r = httpx.post(ray_url + "/api/v1/tts", timeout=300,
                   json={"text": "The scale-out path still speaks.", "voice": "joe",
                         "format": "wav"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("audio/wav"), r.text
    wav, sr = sf.read(io.BytesIO(r.content), dtype="float32")
    assert len(wav) > 0.8 * sr and float(abs(wav).max()) > 0.05

    t0, arrivals, data = time.perf_counter(), [], b""
    with httpx.stream("POST", ray_url + "/api/v1/tts", timeout=300,
                      json={"text": "One sentence. Then a second one. And a third.",
                            "voice": "joe", "format": "pcm16", "stream": True}) as s:
        assert s.status_code == 200
        for chunk in s.iter_bytes():
            data += chunk
            arrivals.append(time.perf_counter() - t0)
    assert len(arrivals) >= 2 and arrivals[0] < arrivals[-1], arrivals
    assert len(data) > 2 * 22050  # more than a second of 16-bit samples

    bad = httpx.post(ray_url + "/api/v1/tts", timeout=60, json={"text": "   "})
    assert bad.status_code == 422, bad.text
    error = bad.json()["error"]
    assert set(error) == {"message", "type", "code"} and error["code"] == 422
    assert "text" in error["message"].lower()
    # The ingress has the app's request guards: another site's page, a chunked body over
    # the limit, JSON as text/plain.
    r = httpx.post(ray_url + "/admin/reload", headers={"Origin": "https://evil.example"},
                   timeout=60)
    assert r.status_code == 403 and r.json()["error"]["type"] == "CrossSiteError", r.text
    big = (b" " * 2**20 for _ in range(4))
    r = httpx.post(ray_url + "/api/v1/tts", content=big, timeout=60,
                   headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == 413, r.text
    r = httpx.post(ray_url + "/api/v1/tts", content=b'{"text": "Hi."}', timeout=60,
                   headers={"content-type": "text/plain"})
    assert r.status_code == 415, r.text
    assert get_json(ray_url + "/health/ready", timeout=60)[1]["ready"] is True


def test_a_fitted_voice_imported_through_the_ingress_speaks_on_a_replica(ray_url, tmp_path):
    """A voice fitted elsewhere travels as one file: the ingress imports it into the shared
    voices folder and a replica speaks it; fitting itself is refused there (409)."""
    import numpy as np

    from cosyvoice.voice.store import VoiceStore
    from cosyvoice.voice.transfer import export_voice
    from tests.conftest import require_kokoro

    voices = require_kokoro() / "voices"
    pack = sum(0.5 * np.fromfile(voices / f"{n}.bin", "<f4").reshape(510, 256)
               for n in ("af_heart", "af_bella")).astype(np.float32)
    elsewhere = VoiceStore(tmp_path / "elsewhere")
    made = elsewhere.save_fitted("ray-fit", pack, {"method": "test", "lang": "en",
                                                   "start_blend": "af_heart:1+af_bella:1"})
    r = httpx.post(ray_url + "/api/v1/voices/import", timeout=60,
                   files={"file": ("ray-fit.cvvoice", export_voice(made), "application/zip")})
    assert r.status_code == 201 and r.json()["kind"] == "fitted", r.text
    r = httpx.post(ray_url + "/api/v1/tts", timeout=300,
                   json={"text": "A fitted voice on a replica.", "voice": "ray-fit",
                         "format": "wav"})
    assert r.status_code == 200, r.text
    wav, sr = sf.read(io.BytesIO(r.content), dtype="float32")
    assert len(wav) > 0.8 * sr and float(abs(wav).max()) > 0.05
    r = httpx.post(ray_url + "/api/v1/voices/fit", timeout=60, data={"name": "x"},
                   files={"prompt": ("p.wav", b"RIFF", "audio/wav")})
    assert r.status_code == 409 and "import" in r.json()["error"]["message"], r.text
