"""Refuse state-changing requests that a web page of another site sends (ASGI middleware).

A browser sends a page's requests with the user's network position: a page on any site,
open in the operator's browser, can POST to ``http://127.0.0.1:7860/admin/restart``, where
loopback needs no admin token. Browsers say where a request comes from, and a page cannot
forge it: ``Sec-Fetch-Site`` (``same-origin``, ``same-site``, ``cross-site``), ``Origin``
(on every POST, PUT, PATCH and DELETE; ``null`` from sandboxed pages) and ``Referer``.

So every POST, PUT, PATCH and DELETE — the REST and OpenAI routes, the admin routes and the
Gradio events under ``/gradio_api/`` — whose sender is a page of another origin is refused
with a 403 in the one error shape, before any of it is read. The app's own address is the
one the browser used: ``Host``, or behind a reverse proxy ``X-Forwarded-Host`` /
``Forwarded: host=`` (ports compared, a scheme's default port left out as browsers do).
Requests that carry no ``Origin`` and no ``Referer`` pass: they do not come from a web page
(curl, gradio_client, the watchdog). A CORS preflight from another origin is refused too,
so that such a page cannot add headers (``X-Forwarded-Host`` …) to a request either.
``--allowed-origins`` names other origins that may send them (a proxy that rewrites
``Host`` and sends no ``X-Forwarded-Host``; an embedding site).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers

from cosyvoice.server.errors import error_response

logger = logging.getLogger(__name__)

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_FORWARDED_HOST = re.compile(r'(?:^|;)\s*host="?([^;,"\s]+)', re.IGNORECASE)


def sender_origin(headers: Headers) -> str | None:
    """The origin of the page that sent the request (``Origin``, else the ``Referer``'s
    scheme and host), or None when it names none (not sent by a web page)."""
    origin = headers.get("origin")
    if origin is not None:
        return origin.strip()
    referer = headers.get("referer")
    if not referer:
        return None
    parts = urlsplit(referer.strip())
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "null"


def _host_port(netloc: str, scheme: str) -> tuple[str, int | None] | None:
    """(lower-case host, port or None for the scheme's default) of ``host[:port]``."""
    try:
        parts = urlsplit("//" + netloc.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return host.rstrip("."), None if port == DEFAULT_PORTS.get(scheme) else port


def own_hosts(headers: Headers) -> list[str]:
    """The app's address as the browser saw it: ``Host``, and what a reverse proxy says
    the client asked for (``X-Forwarded-Host``, ``Forwarded: host=``; the first hop's)."""
    found = [headers.get("host", "")]
    forwarded_host = headers.get("x-forwarded-host")
    if forwarded_host:
        found.append(forwarded_host.split(",")[0])
    match = _FORWARDED_HOST.search(headers.get("forwarded", "").split(",")[0])
    if match:
        found.append(match.group(1))
    return [h.strip() for h in found if h.strip()]


def is_own_origin(origin: str, headers: Headers) -> bool:
    """True when ``origin`` (``scheme://host[:port]``) is the app's own address."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
        return False
    sender = _host_port(parts.netloc, parts.scheme)
    return sender is not None and any(
        _host_port(h, parts.scheme) == sender for h in own_hosts(headers))


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]``, lower case, a default port left out."""
    parts = urlsplit(origin.strip().rstrip("/"))
    where = _host_port(parts.netloc, parts.scheme)
    if where is None:
        raise ValueError(f"not an origin: {origin!r}; write scheme://host[:port]")
    host, port = where
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port else "")


class OriginGuard:
    """ASGI middleware: a 403 for state-changing requests (and CORS preflights) sent by a
    page of a foreign origin; ``allowed``: origins that may send them besides the app's."""

    def __init__(self, app: Any, allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = {normalize_origin(o) for o in allowed if o.strip()}

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            why = self.refusal(scope["method"], Headers(scope=scope))
            if why is not None:
                logger.info("%s %s refused 403 (CrossSiteError): %s", scope["method"],
                            scope["path"], why)
                await error_response(403, why, "CrossSiteError")(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, method: str, headers: Headers) -> str | None:
        """Why a request is refused, or None when it may pass."""
        preflight = method == "OPTIONS" and "access-control-request-method" in headers
        if method not in STATE_CHANGING and not preflight:
            return None
        origin = sender_origin(headers)
        if origin is None:
            return None  # not sent by a web page
        site = headers.get("sec-fetch-site", "").lower()
        if site == "same-origin" and not preflight:
            return None  # the browser's own word: the app's page sent it
        if site not in ("cross-site", "same-site") and is_own_origin(origin, headers):
            return None
        try:
            if normalize_origin(origin) in self.allowed:
                return None
        except ValueError:
            pass
        own = ", ".join(own_hosts(headers)) or "unknown"
        said = f" (the browser says {site})" if site in ("cross-site", "same-site") else ""
        return (f"this {method} was sent by a web page of {origin}{said}, not by this app's "
                f"own page ({own}): a page of another site may not act here (cross-site "
                "request). Use the app's own page, or call the API from a program (curl, "
                "gradio_client); --allowed-origins lets a trusted site in")
