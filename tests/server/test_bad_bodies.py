"""The bad-input catalogue of request senders and bodies (issue #35, 3, 4, 5 and 7), on the
real app (``running_app``: loopback, where admin actions need no token; ``guarded_app``:
token required, ``--allowed-origins https://embed.example``):

- cross-site requests: a web page of another origin (``Origin``, ``null``, a ``Referer``,
  another port, ``Sec-Fetch-Site: cross-site``) sends POST/PUT/PATCH/DELETE to the admin,
  model, lexicon, voice, synthesis and Gradio routes → 403 ``CrossSiteError``, nothing done;
  the app's own page, a proxy's ``X-Forwarded-Host``, an allowed origin, curl and
  gradio_client pass;
- media types: JSON sent as text/plain, form-urlencoded or without a Content-Type → 415;
- body limits: chunked bodies with no Content-Length and declared lengths over each route's
  limit → 413 in the one shape, with the server's RSS flat under a 200 MB body; the
  longest valid body still passes;
- the lexicon's limits on every way in (REST PUT and POST, the UI's Lexicon tab, the file);
- malformed bodies: a multipart form without its closing boundary (clone mode used to lose
  the prompt silently), UTF-16/UTF-32 JSON → 400; a model-route error reads well.

After each case the app is live and ready, its pid and model states are the same, and
nothing in outputs/, jobs/, the voices folder, the upload folders or the lexicon changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio_client import Client

from cosyvoice.frontend.lexicon import MAX_ENTRIES, READING_MAX, WORD_MAX, Lexicon
from tests.conftest import RunningApp, get_json
from tests.server.conftest import ADMIN_TOKEN
from tests.server.test_error_shape import assert_error_shape

pytestmark = pytest.mark.slow

MB = 2**20
BOUNDARY = "catalogueBOUNDARY"
ALLOWED = "https://embed.example"


# --- the invariant around every case -------------------------------------------------------

def _files(app: RunningApp) -> set[tuple[str, int]]:
    roots = [app.outputs, app.workdir / "jobs", app.workdir / "voices",
             app.workdir / "cache" / "uploads", app.workdir / "cache" / "gradio"]
    found = {(str(p), p.stat().st_size) for root in roots if root.exists()
             for p in root.rglob("*") if p.is_file()}
    lexicon = app.workdir / "lexicon.json"
    return found | ({(str(lexicon), lexicon.stat().st_mtime_ns)} if lexicon.exists() else set())


def _state(app: RunningApp) -> dict:
    status, ready = get_json(app.url + "/health/ready", timeout=30)
    assert status == 200 and ready["ready"] is True, ready
    live, _ = get_json(app.url + "/health/live", timeout=30)
    assert live == 200
    # READY models only: an optional one may finish loading meanwhile, none may be unloaded.
    return {"pid": ready["pid"], "ready": {m["name"] for m in ready["models"]
                                           if m["state"] == "READY"},
            "lexicon": get_json(app.url + "/api/v1/lexicon")[1],
            "voices": get_json(app.url + "/api/v1/voices")[1],
            "jobs": get_json(app.url + "/api/v1/jobs")[1], "files": _files(app)}


@pytest.fixture
def unchanged(running_app: RunningApp) -> Iterator[None]:
    before = _state(running_app)
    yield
    after = _state(running_app)
    assert after.pop("ready") >= before.pop("ready")
    for key in before:
        assert after[key] == before[key], key


@pytest.fixture
def guarded_unchanged(guarded_app: RunningApp) -> Iterator[None]:
    before = _state(guarded_app)
    yield
    after = _state(guarded_app)
    assert after.pop("ready") >= before.pop("ready")
    assert after == before


def _form(*parts: tuple[str, bytes, str | None], close: bool = True) -> bytes:
    out = b""
    for name, value, filename in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"'
                                                      if filename else "")
        out += (f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
                + ("Content-Type: application/octet-stream\r\n" if filename else "")
                + "\r\n").encode() + value + b"\r\n"
    return out + (f"--{BOUNDARY}--\r\n".encode() if close else b"")


FORM_TYPE = f"multipart/form-data; boundary={BOUNDARY}"
FORM_END = f"\r\n--{BOUNDARY}--\r\n".encode()


def _file_head(name: str, *fields: tuple[str, bytes]) -> bytes:
    """A form's text fields and the start of a file part (its bytes follow)."""
    return (_form(*((k, v, None) for k, v in fields), close=False)
            + f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"; '
              'filename="a.wav"\r\n\r\n'.encode())


# --- 1. cross-site requests ------------------------------------------------------------------

FOREIGN = [
    pytest.param({"Origin": "https://evil.example"}, id="foreign-origin"),
    pytest.param({"Origin": "null"}, id="null-origin-sandboxed-page"),
    pytest.param({"Referer": "http://evil.example/page.html"}, id="foreign-referer-no-origin"),
    pytest.param({"Origin": "http://127.0.0.1:1"}, id="same-host-other-port"),
    pytest.param({"Origin": "{url}", "Sec-Fetch-Site": "cross-site"},
                 id="browser-says-cross-site"),
    pytest.param({"Origin": "http://app.evil.example", "Sec-Fetch-Site": "same-site"},
                 id="same-site-subdomain"),
    pytest.param({"Origin": "not a url"}, id="garbage-origin"),
]

GRADIO_JOIN = json.dumps({"data": ["", "en"], "fn_index": 0, "session_hash": "x1"}).encode()
# (method, path, body, content type): every kind of state-changing route; each would act if
# the request got through (unload, reload, write the lexicon, delete a voice, synthesize,
# run a Gradio event, store an upload).
STATE_CHANGING = [
    ("POST", "/admin/unload", b"", None),
    ("POST", "/admin/reload", b"{}", "text/plain"),
    ("POST", "/api/v1/models/vocoder/unload", b"", None),
    ("POST", "/api/v1/models/vocoder/reload", b"{}", "application/json"),
    ("POST", "/api/v1/lexicon", b'{"word": "tomato", "reading": "T AH0 M AA1 T OW2"}',
     "application/json"),
    ("PUT", "/api/v1/lexicon", b"{}", "application/json"),
    ("DELETE", "/api/v1/lexicon/tomato", b"", None),
    ("DELETE", "/api/v1/voices/somebody", b"", None),
    ("PATCH", "/api/v1/voices/somebody", b'{"name": "other"}', "application/json"),
    ("DELETE", "/api/v1/jobs/0000", b"", None),
    ("POST", "/api/v1/tts", b'{"text": "Hello."}', "text/plain"),
    ("POST", "/v1/audio/speech", b'{"input": "Hello."}', "application/json"),
    ("POST", "/gradio_api/queue/join", GRADIO_JOIN, "application/json"),
    ("POST", "/gradio_api/call/admin_unload", b'{"data": ["", "en"]}', "application/json"),
    ("POST", "/gradio_api/upload", _form(("files", b"RIFF0000WAVE", "a.wav")), FORM_TYPE),
]


def _headers(app: RunningApp, template: dict, ctype: str | None) -> dict:
    out = {k: v.format(url=app.url, port=app.port) for k, v in template.items()}
    return {**out, **({"content-type": ctype} if ctype else {})}


@pytest.mark.parametrize("sender", FOREIGN)
def test_a_foreign_page_cannot_change_anything(running_app, unchanged, sender):
    for method, path, body, ctype in STATE_CHANGING:
        r = httpx.request(method, running_app.url + path, content=body, timeout=60,
                          headers=_headers(running_app, sender, ctype))
        err = assert_error_shape(r, (403,))
        assert err["type"] == "CrossSiteError", (path, err)
        assert "another site" in err["message"], err


@pytest.mark.parametrize("path", ["/admin/restart", "/api/v1/restart"])
def test_a_foreign_page_cannot_restart_even_with_a_token_free_route(guarded_app,
                                                                    guarded_unchanged, path):
    """Refused as cross-site before the token is asked for (the guarded app: were the
    origin check missing, the token check would answer AdminError and nothing restarts)."""
    for sender in ({"Origin": "https://evil.example"}, {"Referer": "https://evil.example/"}):
        r = httpx.post(guarded_app.url + path, headers={**sender, "content-type": "text/plain"},
                       content=b'{"keep_outputs": false}', timeout=30)
        assert assert_error_shape(r, (403,))["type"] == "CrossSiteError"


def test_a_foreign_preflight_is_refused(running_app, unchanged):
    """So that a foreign page cannot add headers (X-Forwarded-Host …) or send JSON either."""
    for path in ("/gradio_api/queue/join", "/api/v1/tts", "/admin/unload"):
        r = httpx.options(running_app.url + path, timeout=30, headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-forwarded-host"})
        assert_error_shape(r, (403,))
        assert "access-control-allow-origin" not in r.headers


def test_the_apps_own_page_and_programs_pass(running_app):
    """Own origin, a same-origin Referer, the browser's own word (Sec-Fetch-Site), no
    sender at all (curl), and gradio_client."""
    url = running_app.url
    senders = [{"Origin": url}, {"Referer": url + "/?view=api"},
               {"Origin": "https://public.example", "Sec-Fetch-Site": "same-origin"}, {}]
    for sender in senders:
        r = httpx.post(url + "/admin/unload", headers=sender, timeout=60)
        assert r.status_code == 200, (sender, r.text)
        r = httpx.post(url + "/gradio_api/call/admin_unload", json={"data": ["", "en"]},
                       headers=sender, timeout=60)
        assert r.status_code == 200 and "event_id" in r.json(), (sender, r.text)
    client = Client(url, verbose=False)
    status, _ = client.predict("", "en", api_name="/admin_unload")
    assert "idle" in status.lower() or "unloaded" in status.lower()


PROXIED = [
    pytest.param({"X-Forwarded-Host": "tts.example.com", "X-Forwarded-For": "203.0.113.7"},
                 "https://tts.example.com", id="x-forwarded-host"),
    pytest.param({"X-Forwarded-Host": "tts.example.com:8443, inner.local",
                  "X-Forwarded-For": "203.0.113.7"}, "https://tts.example.com:8443",
                 id="x-forwarded-host-port-first-hop"),
    pytest.param({"Forwarded": 'for=203.0.113.7;host="tts.example.com";proto=https'},
                 "https://tts.example.com", id="forwarded-host"),
    pytest.param({"Host": "tts.example.com", "X-Forwarded-For": "203.0.113.7"},
                 "https://tts.example.com", id="proxy-keeps-host"),
]


@pytest.mark.parametrize("proxy, origin", PROXIED)
def test_the_page_behind_a_proxy_passes_the_origin_check(running_app, proxy, origin):
    """Its origin is the proxy's public address: it passes the origin check; the admin
    route then asks for the token (a proxied request), the lexicon route serves it."""
    headers = {**proxy, "Origin": origin}
    r = httpx.post(running_app.url + "/admin/unload", headers=headers, timeout=30)
    assert assert_error_shape(r, (403,))["type"] == "AdminError"
    entry = {"word": "Zyxwv", "reading": "Z IH1 K S"}
    r = httpx.post(running_app.url + "/api/v1/lexicon", json=entry, headers=headers,
                   timeout=30)
    assert r.status_code == 201, r.text
    r = httpx.delete(running_app.url + "/api/v1/lexicon/Zyxwv", headers=headers, timeout=30)
    assert r.status_code == 200, r.text


def test_an_allowed_origin_passes_and_others_do_not(guarded_app, guarded_unchanged):
    """--allowed-origins https://embed.example (the guarded app)."""
    url = guarded_app.url
    r = httpx.post(url + "/admin/unload", headers={"Origin": ALLOWED}, timeout=30)
    assert assert_error_shape(r, (403,))["type"] == "AdminError"  # past the origin check
    r = httpx.post(url + "/admin/unload", timeout=30,
                   headers={"Origin": ALLOWED + ":444", "X-Admin-Token": ADMIN_TOKEN})
    assert assert_error_shape(r, (403,))["type"] == "CrossSiteError"
    r = httpx.options(url + "/gradio_api/queue/join", timeout=30, headers={
        "Origin": ALLOWED, "Access-Control-Request-Method": "POST"})
    assert r.status_code == 200, r.text  # not refused here (Gradio's CORS answers it)


# --- 2. media types ----------------------------------------------------------------------------

MEDIA = [
    pytest.param("text/plain", id="text-plain"),
    pytest.param("application/x-www-form-urlencoded", id="form-urlencoded-curl-d"),
    pytest.param(None, id="no-content-type"),
    pytest.param("application/xml", id="xml"),
    pytest.param("application/json; charset=latin-1", id="json-foreign-charset"),
]


@pytest.mark.parametrize("ctype", MEDIA)
def test_json_routes_want_application_json(running_app, unchanged, ctype):
    routes = [("/admin/reload", b"{}"), ("/admin/unload", b"{}"),
              ("/api/v1/models/vocoder/unload", b"{}"),
              ("/api/v1/tts", b'{"text": "Hello there."}'),
              ("/v1/audio/speech", b'{"input": "Hello there."}'),
              ("/api/v1/dialogue", b'{"script": "[joe] Hello."}'),
              ("/api/v1/lexicon", b'{"word": "tomato", "reading": "T AH0 M AA1 T OW2"}')]
    for path, body in routes:
        headers = {"content-type": ctype} if ctype else {}
        r = httpx.post(running_app.url + path, content=body, headers=headers, timeout=60)
        err = assert_error_shape(r, (415,))
        assert err["type"] == "MediaTypeError" and "application/json" in err["message"], err
    r = httpx.put(running_app.url + "/api/v1/lexicon", content=b"{}", timeout=30,
                  headers={"content-type": ctype} if ctype else {})
    assert_error_shape(r, (415,))


@pytest.mark.parametrize("path", ["/admin/restart", "/api/v1/restart"])
def test_a_text_plain_restart_is_415_not_a_restart(guarded_app, guarded_unchanged, path):
    """415 comes before the token check (the guarded app): were text/plain still parsed as
    JSON, this would be AdminError."""
    r = httpx.post(guarded_app.url + path, content=b'{"keep_outputs": true}',
                   headers={"content-type": "text/plain"}, timeout=30)
    assert assert_error_shape(r, (415,))["type"] == "MediaTypeError"


def test_form_only_and_json_only_routes_refuse_the_other(running_app, unchanged):
    r = httpx.post(running_app.url + "/api/v1/transcribe", json={"audio": "x"}, timeout=30)
    assert "multipart" in assert_error_shape(r, (415,))["message"]
    r = httpx.post(running_app.url + "/v1/audio/speech", data={"input": "hi"},
                   files={"f": ("a.txt", b"x")}, timeout=30)
    assert_error_shape(r, (415,))


def test_an_empty_post_without_a_type_still_works(running_app):
    """curl -X POST with no body: no media type to check (the origin check stands)."""
    r = httpx.post(running_app.url + "/admin/unload", timeout=30)
    assert r.status_code == 200, r.text


# --- 3. body limits ----------------------------------------------------------------------------

def _chunks(total: int, head: bytes = b"", tail: bytes = b"", size: int = MB) -> Iterator[bytes]:
    yield head
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        yield b" " * n if head.startswith(b"{") else b"\0" * n
        sent += n
    yield tail


def _rss_mb(app: RunningApp) -> float:
    for line in Path(f"/proc/{app.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


CHUNKED = [  # (path, method, content type, head, tail, bytes sent, the limit's words)
    pytest.param("/api/v1/tts", "POST", "application/json", b'{"text": "hi", "x": "',
                 b'"}', 2 * MB, "256 kb", id="tts-json"),
    pytest.param("/v1/audio/speech", "POST", "application/json", b'{"input": "hi", "x": "',
                 b'"}', 2 * MB, "256 kb", id="openai-speech"),
    pytest.param("/api/v1/dialogue", "POST", "application/json", b'{"script": "',
                 b'"}', 2 * MB, "256 kb", id="dialogue"),
    pytest.param("/api/v1/lexicon", "PUT", "application/json", b'{"entries": [], "x": "',
                 b'"}', 12 * MB, "lexicon words", id="lexicon-put"),
    pytest.param("/api/v1/lexicon", "POST", "application/json", b'{"word": "',
                 b'"}', 1 * MB, "256 kb", id="lexicon-post"),
    pytest.param("/admin/unload", "POST", "application/json", b'{"x": "', b'"}', MB,
                 "256 kb", id="admin"),
    pytest.param("/api/v1/voices", "POST", "application/json", b'{"name": "',
                 b'"}', MB, "256 kb", id="voice-blend"),
    pytest.param("/api/v1/voices/somebody", "PATCH", "application/json", b'{"name": "',
                 b'"}', MB, "256 kb", id="voice-rename"),
    pytest.param("/api/v1/jobs", "POST", "application/json", b'{"content": "',
                 b'"}', 21 * MB, "--max-upload-mb", id="job-json"),
    pytest.param("/api/v1/tts", "POST", FORM_TYPE,
                 _file_head("prompt", ("text", b"hi"), ("mode", b"clone")), FORM_END, 21 * MB,
                 "--max-upload-mb", id="tts-upload"),
    pytest.param("/api/v1/voices", "POST", FORM_TYPE, _file_head("prompt", ("name", b"big")),
                 FORM_END, 21 * MB, "--max-upload-mb", id="voice-upload"),
    pytest.param("/api/v1/jobs", "POST", FORM_TYPE, _file_head("file"), FORM_END, 21 * MB,
                 "--max-upload-mb", id="job-upload"),
    pytest.param("/api/v1/transcribe", "POST", FORM_TYPE, _file_head("audio"), FORM_END,
                 21 * MB, "--max-upload-mb", id="transcribe-upload"),
    pytest.param("/gradio_api/upload", "POST", FORM_TYPE, _file_head("files"), FORM_END,
                 21 * MB, "--max-upload-mb", id="gradio-upload"),
    pytest.param("/gradio_api/queue/join", "POST", "application/json", b'{"data": ["',
                 b'"]}', 12 * MB, "largest ui event", id="gradio-event"),
]


@pytest.mark.parametrize("path, method, ctype, head, tail, total, words", CHUNKED)
def test_a_chunked_body_over_the_limit_is_413(running_app, unchanged, path, method, ctype,
                                              head, tail, total, words):
    """No Content-Length: the guard counts the bytes as they come and stops reading."""
    r = httpx.request(method, running_app.url + path, content=_chunks(total, head, tail),
                      headers={"content-type": ctype}, timeout=120)
    err = assert_error_shape(r, (413,))
    assert words in err["message"].lower() and path in err["message"], err


@pytest.mark.parametrize("path, method, ctype, head, tail, total, words", CHUNKED[:3])
def test_a_declared_length_over_the_limit_is_413_before_reading(running_app, unchanged, path,
                                                               method, ctype, head, tail,
                                                               total, words):
    body = b"".join(_chunks(total, head, tail))
    r = httpx.request(method, running_app.url + path, content=body,
                      headers={"content-type": ctype}, timeout=120)
    err = assert_error_shape(r, (413,))
    assert f"is {len(body) / MB:.1f} mb" in err["message"].lower(), err


def test_200_mb_chunked_bodies_leave_the_memory_flat(running_app, unchanged):
    """The issue's example: a 200 MB chunked body used to be read whole (+600 MB RSS)."""
    before = _rss_mb(running_app)
    for path, head in (("/api/v1/tts", b'{"text": "'), ("/v1/audio/speech", b'{"input": "')):
        r = httpx.post(running_app.url + path, content=_chunks(200 * MB, head, b'"}'),
                       headers={"content-type": "application/json"}, timeout=300)
        assert_error_shape(r, (413,))
    grown = _rss_mb(running_app) - before
    assert grown < 30, f"RSS grew {grown:.0f} MB"


def test_the_longest_valid_bodies_pass_the_limit(running_app, unchanged):
    """A text of --max-text-chars characters with every field full, all escaped as
    \\uXXXX, reaches validation (a bad speed: 422), not 413; so does a lexicon PUT of
    MAX_ENTRIES entries at the longest, escaped, whose last entry is bad (nothing written)."""
    body = {"text": "中" * 1000, "instruction": "快" * 1000, "prompt_text": "好" * 500,
            "voice": "v" * 100, "mode": "preset", "speed": 9}
    r = httpx.post(running_app.url + "/api/v1/tts", content=json.dumps(body).encode(),
                   headers={"content-type": "application/json"}, timeout=60)
    assert "speed" in assert_error_shape(r, (422,))["message"]
    reading = " ".join(["a1"] * WORD_MAX)
    assert len(reading) <= READING_MAX
    entries = [{"word": chr(0x4E00 + i // 200) + chr(0x4E00 + i % 200) + "啊" * (WORD_MAX - 2),
                "reading": reading} for i in range(MAX_ENTRIES)]
    entries[-1]["reading"] = "NOT PINYIN"
    raw = json.dumps({"entries": entries}).encode()  # every hanzi as \uXXXX
    assert len(raw) > 1.5 * MB
    r = httpx.put(running_app.url + "/api/v1/lexicon", content=raw, timeout=120,
                  headers={"content-type": "application/json"})
    assert_error_shape(r, (422,))


# --- 4. the lexicon's limits on every way in ---------------------------------------------------

LONG_WORD, LONG_READING = "w" * (WORD_MAX + 1), ("AH0 " * 60).strip()
BAD_LEXICONS = [
    pytest.param({"en": {LONG_WORD: "W ER1 D"}}, "at most 40", id="word-41-by-language"),
    pytest.param({"entries": [{"word": LONG_WORD, "reading": "W ER1 D"}]}, "at most 40",
                 id="word-41-by-entries"),
    pytest.param({"zh": {"长" * 41: " ".join(["chang2"] * 41)}}, "at most 40",
                 id="zh-phrase-41"),
    pytest.param({"en": {"word": LONG_READING}}, "at most 200", id="reading-over-200"),
    pytest.param({"entries": [{"word": f"w{i}", "reading": "W ER1 D"}
                              for i in range(MAX_ENTRIES + 1)]}, "at most 5000",
                 id="entries-5001"),
    pytest.param({"en": {"tomato": "T AH0 M AA1 T OW2", "x" * 39 + " " * 500 + "y": "W ER1 D"}},
                 "at most 40", id="padded-word"),
]


@pytest.mark.parametrize("document, words", BAD_LEXICONS)
def test_a_lexicon_put_applies_the_posts_limits(running_app, unchanged, document, words):
    r = httpx.put(running_app.url + "/api/v1/lexicon", json=document, timeout=60)
    assert words in assert_error_shape(r, (422,))["message"]


def test_the_lexicon_post_and_the_ui_save_apply_the_same_limits(running_app, unchanged):
    r = httpx.post(running_app.url + "/api/v1/lexicon", timeout=30,
                   json={"word": LONG_WORD, "reading": "W ER1 D"})
    assert_error_shape(r, (422,))
    client = Client(running_app.url, verbose=False)
    for text in (f"{LONG_WORD} W ER1 D", f"word {LONG_READING}",
                 "\n".join(f"w{i} W ER1 D" for i in range(MAX_ENTRIES + 1))):
        shown, status = client.predict(text, api_name="/lexicon_save")
        assert "not saved" in status and shown == text


def test_a_lexicon_file_over_the_limits_is_not_applied(tmp_path, caplog):
    """The file at start (or edited on disk) goes through the same check: its entries are
    not used, it is set aside as damaged (kept, not overwritten), and the log says why."""
    path = tmp_path / "lexicon.json"
    document = json.dumps({"en": {"tomato": "T AH0 M AA1 T OW2", LONG_WORD: "W ER1 D"}})
    path.write_text(document, "utf-8")
    with caplog.at_level("WARNING"):
        readings = Lexicon(path).readings()
    assert "tomato" not in readings and LONG_WORD not in readings
    assert "at most 40" in caplog.text
    [aside] = tmp_path.glob("lexicon.json.damaged*")
    assert aside.read_text("utf-8") == document


# --- 5. malformed bodies -----------------------------------------------------------------------

def _clone_form(prompt: Path, close: bool = True, cut: int = 0) -> bytes:
    body = _form(("text", b"Hello there.", None), ("mode", b"clone", None),
                 ("prompt", prompt.read_bytes(), "prompt.mp3"), close=close)
    return body[:-cut] if cut else body


OPEN_FORMS = [
    pytest.param({"close": False}, id="no-closing-boundary"),
    pytest.param({"close": False, "cut": 5000}, id="cut-inside-the-prompt"),
    pytest.param({"close": False, "cut": 2}, id="cut-before-the-last-crlf"),
]


@pytest.mark.parametrize("kw", OPEN_FORMS)
def test_a_clone_form_without_its_closing_boundary_is_400(running_app, unchanged,
                                                          real_female_prompt, kw):
    """It used to be accepted without its prompt part: a preset voice spoke instead."""
    r = httpx.post(running_app.url + "/api/v1/tts", content=_clone_form(real_female_prompt,
                                                                        **kw),
                   headers={"content-type": FORM_TYPE}, timeout=120)
    err = assert_error_shape(r, (400,))
    assert "closing boundary" in err["message"], err


def test_every_form_route_refuses_an_open_form(running_app, unchanged, real_female_prompt):
    audio = real_female_prompt.read_bytes()
    forms = [("/api/v1/voices", _form(("name", b"open", None),
                                       ("prompt", audio, "p.mp3"), close=False)),
             ("/api/v1/transcribe", _form(("audio", audio, "p.mp3"), close=False)),
             ("/api/v1/jobs", _form(("file", b"Hello there.\n", "job.txt"), close=False)),
             ("/gradio_api/upload", _form(("files", audio, "p.mp3"), close=False))]
    for path, body in forms:
        r = httpx.post(running_app.url + path, content=body, timeout=120,
                       headers={"content-type": FORM_TYPE})
        assert "closing boundary" in assert_error_shape(r, (400,))["message"], path


def test_the_same_form_closed_is_served(running_app, real_female_prompt):
    """The control: the whole form clones (so the 400s above are about the boundary)."""
    r = httpx.post(running_app.url + "/api/v1/tts", content=_clone_form(real_female_prompt),
                   headers={"content-type": FORM_TYPE}, timeout=300)
    assert r.status_code == 200 and r.content[:4] == b"RIFF", r.text[:300]


ENCODINGS = [
    pytest.param("utf-16-le", id="utf16-le"), pytest.param("utf-16-be", id="utf16-be"),
    pytest.param("utf-16", id="utf16-bom"), pytest.param("utf-32", id="utf32"),
    pytest.param("cp1252", id="windows-1252"), pytest.param("gb18030", id="gb18030"),
]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_json_that_is_not_utf8_is_400(running_app, unchanged, encoding):
    bodies = [("POST", "/api/v1/tts", {"text": "Grüße there."}),
              ("POST", "/v1/audio/speech", {"input": "Grüße there."}),
              ("PUT", "/api/v1/lexicon", {"en": {"Grüße": "G R UW1 S AH0"}}),
              ("POST", "/api/v1/lexicon", {"word": "Grüße", "reading": "G R UW1 S AH0"}),
              ("POST", "/gradio_api/call/lexicon_save", {"data": ["Grüße G R UW1 S AH0"]})]
    for method, path, body in bodies:
        raw = json.dumps(body, ensure_ascii=False).encode(encoding)
        r = httpx.request(method, running_app.url + path, content=raw, timeout=60,
                          headers={"content-type": "application/json"})
        err = assert_error_shape(r, (400,))
        assert "utf-8" in err["message"].lower(), (path, err)


def test_json_with_a_utf8_bom_is_read(running_app):
    raw = b"\xef\xbb\xbf" + json.dumps({"text": "Hello there.", "format": "wav"}).encode()
    r = httpx.post(running_app.url + "/api/v1/tts", content=raw, timeout=300,
                   headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.content[:4] == b"RIFF", r.text[:300]


def test_a_model_route_error_reads_well_and_is_not_a_503(running_app, unchanged):
    """Loading a built-in model from a folder: 422 saying which models can (none here,
    and how to add one) — it used to be a 503 without Retry-After "…; only none do"."""
    for path in ("/api/v1/models/vocoder/load", "/api/v1/models/kokoro/reload"):
        r = httpx.post(running_app.url + path, json={"model_dir": "/tmp"}, timeout=60)
        err = assert_error_shape(r, (422,))
        assert "--model-dir" in err["message"] and "none do" not in err["message"], err


def test_after_the_catalogue_the_app_serves(running_app):
    """A plain request right after all of the above is served, quickly."""
    t0 = time.perf_counter()
    r = httpx.post(running_app.url + "/api/v1/tts", timeout=300,
                   json={"text": "Still here.", "voice": "joe"})
    assert r.status_code == 200 and r.content[:4] == b"RIFF"
    assert time.perf_counter() - t0 < 120


def test_every_503_carries_retry_after_and_says_it():
    """The error answer itself guarantees it (a model error has no estimate of its own)."""
    from cosyvoice.errors import BusyError, ModelError
    from cosyvoice.server.errors import cosy_error_response, error_response

    for r in (cosy_error_response(ModelError("model x failed to load: flow.pt truncated")),
              error_response(503, "reload failed", "ModelError", extra={"failed": {}}),
              cosy_error_response(BusyError.retry_in(7, "draining"))):
        body = json.loads(r.body)
        retry = r.headers["retry-after"]
        assert r.status_code == 503 and int(retry) > 0
        assert f"{retry} s" in body["error"]["message"], body
