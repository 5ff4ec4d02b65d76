"""The app on a local Ray Serve cluster: 2 synthesis replicas (1 CPU each) behind the
ingress. The REST and OpenAI tests of tests/server/test_api.py and the transcription API tests
of tests/asr/test_surfaces.py run unchanged against it, a load of 4 clients x 20 requests gets
no 5xx and reaches both replicas, and the admin token is enforced at the ingress. Marked
``ray_full`` and left out of a plain run (``pytest -m ray_full tests/serving`` runs it; CI
runs the one-replica smoke test, test_ray_smoke.py). Skipped where Ray is not installed
(requirements-ray.txt; test.sh installs it)."""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

pytest.importorskip("ray.serve")

from cosyvoice.serving.replica import REPLICA_HEADER  # noqa: E402
from tests.asr.conftest import en_prompt, zh_prompt  # noqa: E402,F401  (their fixtures)
from tests.asr.test_surfaces import (  # noqa: E402,F401  (run here against the Ray app)
    test_the_api_refuses_in_the_one_error_shape,
    test_the_api_transcribes_a_prompt,
)
from tests.conftest import ROOT, free_port, get_json  # noqa: E402
from tests.server.test_api import (  # noqa: E402,F401  (run here against the Ray app)
    test_errors_are_json_with_a_message,
    test_openai_client_speech,
    test_openapi_schema_lists_endpoints,
    test_oversized_upload_is_413,
    test_streaming_chunks_arrive_before_the_end,
    test_tts_formats,
    test_tts_json_wav,
    test_tts_multipart_clone,
)

pytestmark = [pytest.mark.slow, pytest.mark.ray_full]

ADMIN_TOKEN = "ray-admin-token-5c1e"


@dataclass
class RayApp:
    """What the API tests need of a running app (tests.conftest.RunningApp's shape)."""

    url: str
    workdir: Path

    def ready(self) -> bool:
        status, body = get_json(self.url + "/health/ready", timeout=30)
        return status == 200 and body.get("ready") is True


def app_args(workdir: Path) -> list[str]:
    return ["--outputs-dir", str(workdir / "outputs"), "--cache-dir", str(workdir / "cache"),
            "--log-dir", str(workdir / "logs"), "--pidfile", str(workdir / "run" / "app.pid"),
            "--voices-dir", str(workdir / "voices"), "--admin-token", ADMIN_TOKEN,
            "--lexicon-file", str(workdir / "lexicon.json"), "--jobs-dir", str(workdir / "jobs"),
            "--concurrency", "2", "--queue-size", "16"]


@pytest.fixture(scope="session")
def ray_app(tmp_path_factory):
    """A local cluster (2 CPUs) with the application deployed by build_app, as serve.yaml
    does; Serve's HTTP proxy on a free port."""
    import ray
    from ray import serve

    from cosyvoice.serving.deployments import build_app

    workdir = tmp_path_factory.mktemp("ray-app")
    port = free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT),
                                       "OMP_NUM_THREADS": "1"}})
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(build_app({"app_args": app_args(workdir), "replicas": 2,
                             "replica_cpus": 1}), name="cosyvoice", route_prefix="/")
        yield RayApp(f"http://127.0.0.1:{port}", workdir)
    finally:
        serve.shutdown()
        ray.shutdown()


@pytest.fixture
def running_app(ray_app):
    """The API tests' fixture, pointed at the Ray app."""
    return ray_app


def test_load_spreads_over_both_replicas_without_5xx(ray_app):
    def client(i: int) -> list[tuple[int, str]]:
        out = []
        with httpx.Client(timeout=120) as http:
            for j in range(20):
                r = http.post(ray_app.url + "/api/v1/tts",
                              json={"text": f"Client {i}, request {j}.", "voice": "joe"})
                out.append((r.status_code, r.headers.get(REPLICA_HEADER, "")))
        return out

    with ThreadPoolExecutor(4) as pool:
        results = [x for part in pool.map(client, range(4)) for x in part]
    statuses = Counter(s for s, _ in results)
    per_replica = Counter(name for s, name in results if s == 200)
    print("statuses", dict(statuses), "per replica", dict(per_replica))
    assert statuses == {200: 80}
    assert len(per_replica) == 2 and min(per_replica.values()) >= 10, per_replica


def test_admin_token_is_enforced_at_the_ingress(ray_app):
    r = httpx.post(ray_app.url + "/admin/reload", timeout=60)
    assert r.status_code == 403 and "admin token" in r.json()["error"]["message"]
    r = httpx.post(ray_app.url + "/admin/reload", headers={"X-Admin-Token": ADMIN_TOKEN},
                   timeout=300)
    assert r.status_code == 200, r.text
    reports = r.json()["replicas"]
    assert len({rep["replica"] for rep in reports}) == 2
    assert all(rep["reloaded"] and not rep["failed"] for rep in reports)
    assert ray_app.ready()


def test_metrics_name_each_replica(ray_app):
    httpx.post(ray_app.url + "/api/v1/tts", json={"text": "Metrics."}, timeout=120)
    text = httpx.get(ray_app.url + "/metrics", timeout=60).text
    replicas = {line.split('replica="')[1].split('"')[0] for line in text.splitlines()
                if line.startswith("cosyvoice_process_rss_bytes")}
    assert len(replicas) == 2, text[:2000]


def test_outputs_stay_off_the_nodes_disk(ray_app):
    r = httpx.post(ray_app.url + "/api/v1/tts", json={"text": "Nothing kept."}, timeout=120)
    assert r.status_code == 200
    assert not list((ray_app.workdir / "outputs").glob("*.wav"))
    assert os.path.isdir(ray_app.workdir / "outputs")


def test_the_lexicon_is_edited_at_the_ingress_in_the_shared_file(ray_app):
    """The replicas' text pass reads the lexicon file the ingress writes (one shared folder,
    the saved voices' file lock)."""
    r = httpx.post(ray_app.url + "/api/v1/lexicon", timeout=30,
                   json={"word": "朝阳", "reading": "chao2 yang2"})
    assert r.status_code == 201, r.text
    assert "朝阳" in (ray_app.workdir / "lexicon.json").read_text(encoding="utf-8")
    assert "朝阳" in httpx.get(ray_app.url + "/api/v1/lexicon", timeout=30).text
    tts = httpx.post(ray_app.url + "/api/v1/tts", timeout=300,
                     json={"text": "朝阳很美。", "voice": "baker", "format": "wav"})
    assert tts.status_code == 200, tts.text[:300]
