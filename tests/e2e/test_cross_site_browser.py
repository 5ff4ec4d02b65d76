"""A page of another site, open in a real browser, cannot act on the app (issue #35, 3).

The attacker's page is served from another local port (another origin) and tries what a
web page can do without asking: ``fetch`` in ``no-cors`` mode (no body, ``text/plain``) and
an auto-submitted ``text/plain`` form, against the loopback app, where admin actions need no
token. Were any of them let in, the vocoder would be UNLOADED, the lexicon would hold the
page's word. The app's own page, in the same browser, still acts (the Models tab's button
path is covered by test_browser.py; here a ``fetch`` from the app's own page)."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from tests.conftest import free_port, get_json

pytestmark = pytest.mark.slow

ATTACK = """<!doctype html><html><body>
<form id="f" method="POST" enctype="text/plain" action="{app}/api/v1/lexicon">
  <input name='{{"word": "pwned", "reading": "P W N D", "x": "' value='"}}'>
</form>
<script>
  const app = "{app}";
  const hits = [
    fetch(app + "/api/v1/models/vocoder/unload", {{method: "POST", mode: "no-cors"}}),
    fetch(app + "/admin/unload", {{method: "POST", mode: "no-cors", body: "{{}}"}}),
    fetch(app + "/gradio_api/call/admin_unload", {{method: "POST", mode: "no-cors",
          headers: {{"content-type": "text/plain"}}, body: '{{"data": ["", "en"]}}'}}),
  ];
  Promise.allSettled(hits).then(() => {{
    document.title = "sent";
    document.getElementById("f").submit();
  }});
</script></body></html>"""


@pytest.fixture
def attacker(e2e_app) -> Iterator[str]:
    page = ATTACK.format(app=e2e_app.url).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def _vocoder(app) -> str:
    _, ready = get_json(app.url + "/health/ready", timeout=30)
    return {m["name"]: m["state"] for m in ready["models"]}["vocoder"]


def test_a_foreign_page_in_the_browser_is_refused(browser, e2e_app, attacker):
    assert _vocoder(e2e_app) == "READY"
    log = e2e_app.workdir / "logs" / "cosyvoice.log"
    before = log.read_text("utf-8")
    context = browser.new_context()
    page = context.new_page()
    statuses: dict[str, int] = {}
    page.on("response", lambda r: statuses.__setitem__(r.url, r.status))
    page.goto(attacker)
    # The page submits its form once the three fetches have settled, and the browser then
    # shows the form's answer (our JSON 403): that navigation is the end of the attack.
    # (Waiting for the title it sets just before can miss it: the page is gone at once.)
    # Generous: on 2 busy cores the freshly started app answered these slowly once.
    page.wait_for_url(e2e_app.url + "/api/v1/lexicon", timeout=120_000)
    page.wait_for_load_state("load")
    time.sleep(1)
    context.close()
    assert _vocoder(e2e_app) == "READY"
    hit = {u.removeprefix(e2e_app.url): c for u, c in statuses.items() if u.startswith(e2e_app.url)}
    assert hit == {"/api/v1/models/vocoder/unload": 403, "/admin/unload": 403,
                   "/gradio_api/call/admin_unload": 403, "/api/v1/lexicon": 403}, hit
    assert "pwned" not in get_json(e2e_app.url + "/api/v1/lexicon")[1]["en"]
    refused = [line for line in log.read_text("utf-8")[len(before):].splitlines()
               if "CrossSiteError" in line]
    assert len(refused) >= 4, refused  # three fetches and the form, each by the origin check


def test_the_apps_own_page_still_acts(page, e2e_app):
    """A fetch from the app's own page (same origin): served."""
    status = page.evaluate("""async () => {
        const r = await fetch("/api/v1/lexicon", {method: "POST",
            headers: {"content-type": "application/json"},
            body: JSON.stringify({word: "Zyxwv", reading: "Z IH1 K S"})});
        return r.status; }""")
    assert status == 201
    assert page.evaluate("""async () => (await fetch("/api/v1/lexicon/Zyxwv",
        {method: "DELETE"})).status""") == 200
