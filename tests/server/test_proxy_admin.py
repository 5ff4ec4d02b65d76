"""Admin actions behind a reverse proxy (issue #23, 7): the loopback app needs no token
for local clients, but a request carrying a proxy's client headers is treated as remote,
over REST and through the Gradio panel's events alike (the real app, ``running_app``). So is
a request whose Host names no loopback address: a page whose DNS name was rebound to
127.0.0.1 (DNS rebinding) is same-origin to the browser, so the origin guard lets it by."""

from __future__ import annotations

import httpx
import pytest
from gradio_client import Client

from tests.server.test_error_shape import assert_error_shape

pytestmark = pytest.mark.slow

PROXY_HEADERS = [
    pytest.param({"X-Forwarded-For": "203.0.113.7"}, id="x-forwarded-for"),
    pytest.param({"Forwarded": "for=203.0.113.7;proto=https"}, id="forwarded"),
    pytest.param({"X-Real-IP": "203.0.113.7"}, id="x-real-ip"),
    pytest.param({"X-Forwarded-For": "127.0.0.1"}, id="forwarded-for-loopback"),
]
ROUTES = ["/admin/unload", "/admin/reload", "/admin/restart", "/api/v1/restart",
          "/api/v1/models/vocoder/unload", "/api/v1/models/vocoder/reload"]


@pytest.mark.parametrize("headers", PROXY_HEADERS)
def test_proxied_admin_requests_need_the_token(running_app, headers):
    pid = httpx.get(running_app.url + "/health/ready", timeout=10).json()["pid"]
    for path in ROUTES:
        r = httpx.post(running_app.url + path, headers=headers, timeout=30)
        err = assert_error_shape(r, (403,))
        assert "reverse proxy" in err["message"] and "admin_token" in err["message"]
    ready = httpx.get(running_app.url + "/health/ready", timeout=10).json()
    assert ready["ready"] and ready["pid"] == pid  # nothing restarted
    assert {m["name"]: m["state"] for m in ready["models"]}["vocoder"] == "READY"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io",
                                  "attacker.localhost.example:{port}"])
def test_a_rebound_host_name_needs_the_token(running_app, host):
    port = running_app.url.rsplit(":", 1)[1]
    name = host.format(port=port)
    httpx.post(running_app.url + "/api/v1/models/vocoder/reload", timeout=120)  # (local)
    pid = httpx.get(running_app.url + "/health/ready", timeout=10).json()["pid"]
    for path in ROUTES:  # as the rebound page sends them: same origin, foreign name
        r = httpx.post(running_app.url + path, timeout=30, headers={
            "Host": name, "Origin": f"http://{name}", "Content-Type": "application/json"})
        err = assert_error_shape(r, (403,))
        assert "admin token" in err["message"].lower(), err
    ready = httpx.get(running_app.url + "/health/ready", timeout=10).json()
    assert ready["ready"] and ready["pid"] == pid
    # nothing unloaded (the local unload at the end of the last case reloaded above)
    assert {m["name"]: m["state"] for m in ready["models"]}["vocoder"] == "READY"
    for local in (f"127.0.0.1:{port}", f"localhost:{port}"):  # the app's own names pass
        r = httpx.post(running_app.url + "/admin/unload", timeout=30,
                       headers={"Host": local, "Origin": f"http://{local}"})
        assert r.status_code == 200, r.text


def test_proxied_request_with_the_token_works_and_local_needs_none(running_app):
    token_file = running_app.workdir / "run" / "admin_token"
    httpx.post(running_app.url + "/admin/unload", headers={"X-Forwarded-For": "1.2.3.4"},
               timeout=30)
    token = token_file.read_text().strip()  # made on the first proxied admin request
    r = httpx.post(running_app.url + "/admin/unload", timeout=30,
                   headers={"X-Forwarded-For": "1.2.3.4", "X-Admin-Token": token})
    assert r.status_code == 200, r.text
    r = httpx.post(running_app.url + "/admin/unload", timeout=30,
                   headers={"X-Forwarded-For": "1.2.3.4", "Authorization": "Bearer wrong"})
    assert r.status_code == 403
    assert httpx.post(running_app.url + "/admin/unload", timeout=30).status_code == 200


def test_panel_events_through_a_proxy_need_the_token(running_app):
    client = Client(running_app.url, verbose=False, headers={"X-Forwarded-For": "1.2.3.4"})
    with pytest.raises(Exception) as info:
        client.predict("", "en", api_name="/admin_unload")
    assert "admin token" in str(info.value).lower()
    token = (running_app.workdir / "run" / "admin_token").read_text().strip()
    status, _ = client.predict(token, "en", api_name="/admin_unload")
    assert "idle" in status.lower() or "unloaded" in status.lower()
    local = Client(running_app.url, verbose=False)
    status, _ = local.predict("", "en", api_name="/admin_unload")
    assert "idle" in status.lower() or "unloaded" in status.lower()
