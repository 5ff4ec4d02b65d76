"""Every request body, on every route, checked as it arrives (ASGI middleware).

Each route has a :class:`BodyRule`: the media types it reads and the most bytes of each
(:mod:`cosyvoice.server.guards` builds them from the settings). The guard counts a body's
bytes as they come in — a ``Content-Length`` over the limit is refused before any is read,
and a chunked body with none is cut off once it passes the limit — so that no route ever
holds more than its limit in memory. It also refuses a body the route would misread:

- a media type the route does not read: 415 (``text/plain`` JSON included — a web page may
  send that cross-site without asking, ``application/json`` it may not);
- a JSON body that is not UTF-8 (UTF-16 and UTF-32 hold NUL bytes, which valid JSON never
  does; invalid UTF-8 sequences): 400;
- a multipart form that ends before its closing boundary (a cut-off upload, which the form
  parser would take as a form without its last part): 400.

A refusal is raised from ``receive`` as :class:`~cosyvoice.server.errors.BodyRefused`, so
the route stops reading; whatever the route then answers, the client gets the refusal in
the one error shape (413, 415 or 400). A route that never reads its body is not affected.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers

from cosyvoice.errors import BodyError, CosyVoiceError, MediaTypeError, UploadTooLargeError
from cosyvoice.server.errors import BodyRefused, cosy_error_response

logger = logging.getLogger(__name__)

JSON, FORM, OTHER = "application/json", "multipart/form-data", "other"
MEDIA_NAMES = {JSON: "JSON (Content-Type: application/json)",
               FORM: "a multipart form (Content-Type: multipart/form-data)"}


@dataclass(frozen=True)
class Limit:
    """The most bytes of one kind of body, and how a message names that limit."""

    bytes: int
    label: str


@dataclass(frozen=True)
class BodyRule:
    """What a route reads: for each media type it takes, the most bytes. ``other``: any
    other media type (the Gradio routes, whose own parsers decide); None: refused (415)."""

    json: Limit | None = None
    form: Limit | None = None
    other: Limit | None = None

    def limit(self, kind: str) -> Limit | None:
        return {JSON: self.json, FORM: self.form, OTHER: self.other}[kind]

    def takes(self) -> str:
        kinds = [MEDIA_NAMES[k] for k, v in ((JSON, self.json), (FORM, self.form)) if v]
        return " or ".join(kinds) or "no body"


def media_kind(content_type: str | None) -> tuple[str, dict[str, str]]:
    """(JSON, FORM or OTHER, the header's parameters lower-cased by name)."""
    main, *params = (content_type or "").split(";")
    main = main.strip().lower()
    options = {}
    for p in params:
        name, _, value = p.partition("=")
        options[name.strip().lower()] = value.strip().strip('"')
    if main == JSON or (main.startswith("application/") and main.endswith("+json")):
        return JSON, options
    return (FORM if main == FORM else OTHER), options


class BodyCheck:
    """One request's body against its rule, fed chunk by chunk (:meth:`feed`)."""

    def __init__(self, rule: BodyRule, method: str, path: str, headers: Headers) -> None:
        self.rule, self.where = rule, f"{method} {path}"
        self.content_type = headers.get("content-type")
        self.kind, options = media_kind(self.content_type)
        self.charset = options.get("charset", "utf-8").lower()
        self.seen = 0
        self.refusal: CosyVoiceError | None = None
        self._utf8 = codecs.getincrementaldecoder("utf-8")() if self.kind == JSON else None
        boundary = options.get("boundary", "") if self.kind == FORM else ""
        self._closing = b"--" + boundary.encode("latin-1", "replace") + b"--" if boundary \
            else b""
        self._tail = b""
        self._closed = False

    def declared(self, length: str | None) -> CosyVoiceError | None:
        """A refusal by the headers alone: a declared length over the limit, or a body of a
        media type the route does not read."""
        if not (length and length.isdigit() and int(length) > 0):
            return None
        return self._media_error() or self._size_error(int(length), declared=True)

    def feed(self, chunk: bytes, more: bool) -> None:
        """Count and check the next chunk; raise BodyRefused (and keep it as ``refusal``)
        when the body breaks the rule."""
        error = None
        if chunk:
            error = (self.seen == 0 and self._media_error()) or None
            self.seen += len(chunk)
            error = error or self._size_error(self.seen) or self._content_error(chunk)
        if error is None and not more:
            error = self._end_error()
        if error is not None:
            self.refusal = error
            raise BodyRefused(error)

    def _media_error(self) -> CosyVoiceError | None:
        if self.rule.limit(self.kind) is None:
            sent = self.content_type or "no Content-Type"
            return MediaTypeError(f"{self.where} reads {self.rule.takes()}, not {sent}; e.g. "
                                  "curl -H 'Content-Type: application/json' -d '{...}'")
        if self.kind == JSON and self.charset not in ("utf-8", "utf8"):
            return MediaTypeError(f"JSON bodies are UTF-8 (Content-Type: application/json; "
                                  f"charset=utf-8); {self.where} got charset={self.charset}: "
                                  "send the body encoded as UTF-8")
        return None

    def _size_error(self, size: int, declared: bool = False) -> CosyVoiceError | None:
        limit = self.rule.limit(self.kind)
        if limit is None or size <= limit.bytes:
            return None
        what = {FORM: "an upload", JSON: "JSON"}.get(self.kind, "a body")
        said = f"is {_size(size)}" if declared else "goes on past it (read no further)"
        return UploadTooLargeError(f"the limit is {limit.label} for {what} to {self.where}; "
                                   f"the request body {said}")

    def _content_error(self, chunk: bytes) -> CosyVoiceError | None:
        if self._utf8 is not None:
            try:
                self._utf8.decode(chunk)
            except UnicodeDecodeError:
                return _not_utf8(self.where)
            if b"\x00" in chunk:
                return _not_utf8(self.where)
        if self._closing and not self._closed:
            window = self._tail + chunk
            self._closed = self._closing in window
            self._tail = window[-(len(self._closing) - 1):]
        return None

    def _end_error(self) -> CosyVoiceError | None:
        if self.seen == 0:  # no body at all: the route decides whether it needs one
            return None
        if self._utf8 is not None:
            try:
                self._utf8.decode(b"", final=True)
            except UnicodeDecodeError:
                return _not_utf8(self.where)
        if self._closing and not self._closed:
            return BodyError(f"the multipart form ends before its closing boundary "
                             f"({self._closing.decode('latin-1')}): the upload was cut off "
                             "or is malformed, and its last part would be lost; send the "
                             "whole form again")
        return None


def _not_utf8(where: str) -> BodyError:
    return BodyError(f"the JSON body of {where} is not UTF-8 text (UTF-16 or another "
                     "encoding?); send it encoded as UTF-8")


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 1024:.0f} KB"


class BodyGuard:
    """ASGI middleware: checks each request body against ``rule_for(method, path)``."""

    def __init__(self, app: Any, rule_for: Callable[[str, str], BodyRule]) -> None:
        self.app = app
        self.rule_for = rule_for

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method, path = scope["method"], scope["path"]
        check = BodyCheck(self.rule_for(method, path), method, path, headers)
        early = check.declared(headers.get("content-length"))
        if early is not None:
            await _refuse(early, scope, receive, send)
            return
        answered = started = False

        async def guarded_receive() -> dict:
            if check.refusal is not None:  # refused: nothing more of this body is read
                raise BodyRefused(check.refusal)
            message = await receive()
            if message["type"] == "http.request":
                check.feed(message.get("body", b""), message.get("more_body", False))
            return message

        async def guarded_send(message: dict) -> None:
            nonlocal answered, started
            if check.refusal is not None and not started:
                if not answered:  # the route's own answer to a body it could not finish
                    answered = True
                    await _refuse(check.refusal, scope, receive, send)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if check.refusal is None or started:
                raise
        if check.refusal is not None and not (answered or started):
            await _refuse(check.refusal, scope, receive, send)  # the route answered nothing


async def _refuse(error: CosyVoiceError, scope: dict, receive: Any, send: Any) -> None:
    logger.info("%s %s refused %d (%s): %s", scope["method"], scope["path"],
                error.http_status, type(error).__name__, error)
    await cosy_error_response(error)(scope, receive, send)
