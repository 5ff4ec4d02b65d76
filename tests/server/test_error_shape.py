"""One error shape on every route, and bodies that cannot be parsed (issue #23, 1 and 3).

Walks every operation of the real app's OpenAPI schema that takes a body (POST, PUT,
PATCH) and sends it malformed bodies: not JSON, invalid UTF-8, UTF-16/UTF-32 JSON,
truncated, a bare value, JSON nested 10,000 deep (Python's parser hits its recursion
limit), an object nested 5,000 deep inside a field, a broken multipart form, one without
its closing boundary, JSON sent as text/plain or form-urlencoded, a foreign charset. Every
answer must be 400 or 422 in OpenAI's shape ``{"error": {"message", "type", "code"}}`` — or
415 where the route does not read that media type (the media types the schema documents
for it; JSON where it documents none) — the app must stay ready, and nothing may appear in
outputs/, the upload folder or the voices folder (issue #35, 3 and 7).

The walk runs against ``guarded_app`` (admin token required): were a body wrongly
accepted by an admin route, the token check would answer 403 and fail the test, so no
restart or unload ever runs.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import RunningApp, get_json
from tests.server.conftest import ADMIN_TOKEN

pytestmark = pytest.mark.slow

DEEP = 10_000  # far past the parser's recursion limit, within every body limit
JSON_TEXT = '{"text": "Hello there.", "input": "Hello there.", "name": "x", "script": "[joe] Hi"}'
BOUNDARY = "xyzBOUNDARY"
FORM_PARTS = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="text"\r\n\r\nhello\r\n'
              f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"; '
              'filename="p.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF0000WAVE\r\n').encode()
MALFORMED: dict[str, tuple[bytes, str]] = {
    "not-json": (b"text=hello&voice=joe", "application/json"),
    "invalid-utf8": (b'{"text": "\xff\xfe\xfa"}', "application/json"),
    "truncated": (b'{"text": "Hello', "application/json"),
    "bare-number": (b"42", "application/json"),
    "bare-list": (b'["text", "hello"]', "application/json"),
    "nested-list": (b"[" * DEEP + b"]" * DEEP, "application/json"),
    "nested-object": (b'{"a":' * DEEP + b"1" + b"}" * DEEP, "application/json"),
    "nested-in-field": (b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b', "input": '
                        + b'{"x":' * 5000 + b"1" + b"}" * 5000 + b"}", "application/json"),
    "broken-multipart": (b"--xyz\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\n"
                         b"hello\r\n--xy", "multipart/form-data; boundary=xyz"),
    "multipart-no-boundary": (b"hello", "multipart/form-data"),
    "multipart-no-closing-boundary": (FORM_PARTS, f"multipart/form-data; boundary={BOUNDARY}"),
    "multipart-cut-in-a-file": (FORM_PARTS[:-12], f"multipart/form-data; boundary={BOUNDARY}"),
    "utf16-le": (JSON_TEXT.encode("utf-16-le"), "application/json"),
    "utf16-bom": (JSON_TEXT.encode("utf-16"), "application/json"),
    "utf32": (JSON_TEXT.encode("utf-32"), "application/json"),
    "latin1": ('{"text": "Grüße"}'.encode("latin-1"), "application/json"),
    "charset-utf16": (JSON_TEXT.encode("utf-16"), "application/json; charset=utf-16"),
    "json-as-text-plain": (JSON_TEXT.encode(), "text/plain"),
    "json-as-form-urlencoded": (JSON_TEXT.encode(), "application/x-www-form-urlencoded"),
    "json-without-content-type": (JSON_TEXT.encode(), ""),
}
MEDIA = {"application/json": "application/json", "multipart/form-data": "multipart/form-data"}


def assert_error_shape(r: httpx.Response, statuses: tuple[int, ...]) -> dict:
    """The one shape: exactly {"error": {"message": str, "type": str, "code": status}}."""
    assert r.status_code in statuses, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert set(err) == {"message", "type", "code"}, err
    assert isinstance(err["message"], str) and len(err["message"]) > 10, err
    assert re.fullmatch(r"[A-Z][A-Za-z]+", err["type"]), err
    assert err["code"] == r.status_code, err
    assert "Traceback" not in err["message"]
    return err


def _files(app: RunningApp) -> set:
    roots = [app.outputs, app.workdir / "cache" / "uploads", app.workdir / "voices"]
    return {p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()}


def _body_operations(app: RunningApp) -> list[tuple[str, str, set[str]]]:
    """(method, path, the media types its schema documents; JSON where none) of every
    operation that takes a body."""
    schema = httpx.get(app.url + "/openapi.json", timeout=30).json()
    ops = []
    for path, item in schema["paths"].items():
        for method, op in item.items():
            if method in ("post", "put", "patch"):
                media = set((op.get("requestBody") or {}).get("content", {}))
                ops.append((method.upper(), re.sub(r"\{[^}]+\}", "vocoder", path),
                            media or {"application/json"}))
    return ops


def _operations(app: RunningApp) -> list[tuple[str, str]]:
    return [(method, path) for method, path, _ in _body_operations(app)]


def _media(ctype: str) -> str:
    main = ctype.split(";")[0].strip()
    return MEDIA.get(main, main or "none")


def test_the_walk_covers_every_body_route(guarded_app):
    ops = _operations(guarded_app)
    assert len(ops) == 18, ops
    assert {("POST", "/api/v1/tts"), ("POST", "/v1/audio/speech"), ("POST", "/admin/restart"),
            ("POST", "/api/v1/voices/fit"), ("POST", "/api/v1/voices/import"),
            ("POST", "/api/v1/restart"), ("PATCH", "/api/v1/voices/vocoder"),
            ("POST", "/api/v1/dialogue"), ("POST", "/api/v1/jobs"), ("PUT", "/api/v1/lexicon"),
            ("POST", "/api/v1/lexicon"), ("POST", "/api/v1/transcribe")} <= set(ops)


@pytest.mark.parametrize("case", list(MALFORMED))
def test_every_route_refuses_malformed_bodies_in_one_shape(guarded_app, case):
    content, ctype = MALFORMED[case]
    before = _files(guarded_app)
    for method, path, media in _body_operations(guarded_app):
        headers = {"content-type": ctype} if ctype else {}
        r = httpx.request(method, guarded_app.url + path, content=content, headers=headers,
                          timeout=60)
        if _media(ctype) not in media or "charset=utf-16" in ctype:
            err = assert_error_shape(r, (415,))
            assert err["type"] == "MediaTypeError", (path, err)
            continue
        err = assert_error_shape(r, (400, 422))
        assert err["type"] in ("BodyError", "ValidationError", "TextError", "PromptError",
                               "VoiceNameError"), (path, err)
        if case.startswith(("utf", "latin1", "multipart-no-closing", "multipart-cut")):
            assert err["code"] == 400, (path, err)  # refused as unreadable, not misread
    assert guarded_app.ready()
    assert _files(guarded_app) == before


@pytest.mark.parametrize("path", ["/api/v1/tts", "/admin/restart", "/v1/audio/speech",
                                  "/api/v1/restart", "/admin/unload"])
def test_deep_nesting_is_400_not_a_traceback(running_app, path):
    """The issue's example: a RecursionError used to escape as a 500 (running_app: the
    loopback app, where admin routes need no token, so the body check alone stands)."""
    r = httpx.post(running_app.url + path, content=b"[" * DEEP + b"]" * DEEP,
                   headers={"content-type": "application/json"}, timeout=60)
    err = assert_error_shape(r, (400,))
    assert "nested" in err["message"] or "parsing the body" in err["message"]
    assert running_app.ready()


@pytest.mark.parametrize("body", [b"[]", b'"restart"', b'{"keep_outputs": "maybe"}',
                                  b'{"keep_outputs": [1]}'])
def test_admin_restart_refuses_a_body_it_cannot_use(running_app, body):
    """It used to read such a body as {} and restart anyway."""
    pid = get_json(running_app.url + "/health/ready")[1]["pid"]
    r = httpx.post(running_app.url + "/admin/restart", content=body,
                   headers={"content-type": "application/json"}, timeout=30)
    assert_error_shape(r, (422,))
    status, ready = get_json(running_app.url + "/health/ready")
    assert status == 200 and ready["pid"] == pid


UNKNOWN = [("GET", "/api/v1/nothing-here", 404), ("POST", "/v1/chat/completions", 404),
           ("DELETE", "/admin/everything", 404), ("GET", "/health/deep", 404),
           ("GET", "/api/v1/tts", 405), ("PUT", "/v1/audio/speech", 405),
           ("DELETE", "/health/ready", 405), ("GET", "/admin/restart", 405)]


@pytest.mark.parametrize("method, path, status", UNKNOWN)
def test_unknown_routes_and_methods_in_one_shape(running_app, method, path, status):
    r = httpx.request(method, running_app.url + path, timeout=30)
    assert_error_shape(r, (status,))
    if status == 405:
        assert r.headers["allow"]


def test_documented_errors_use_the_shape_in_the_schema(guarded_app):
    """Every 4xx/5xx the schema documents points at the ErrorBody model."""
    schema = httpx.get(guarded_app.url + "/openapi.json", timeout=30).json()
    assert set(schema["components"]["schemas"]["ErrorBody"]["properties"]) == {"error"}
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, item in schema["paths"].items():
        for method, op in item.items():
            for code, resp in op.get("responses", {}).items():
                if code.isdigit() and int(code) >= 400:
                    ref = resp["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorBody"), (method, path, code)


def test_token_errors_and_busy_errors_share_the_shape(guarded_app):
    r = httpx.post(guarded_app.url + "/admin/unload", timeout=30)
    assert_error_shape(r, (403,))
    r = httpx.post(guarded_app.url + "/api/v1/models/nope/load", timeout=30,
                   headers={"x-admin-token": ADMIN_TOKEN})
    assert_error_shape(r, (404,))
