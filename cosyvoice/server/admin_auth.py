"""Who may run an admin action (reload, unload, load a folder, restart).

An admin token is required whenever the app listens beyond loopback, and for a request that
may come from beyond this machine although it reached a loopback app: it came through a
reverse proxy (it carries ``Forwarded``, ``X-Forwarded-For`` or ``X-Real-IP``: a proxy on
the same host connects from 127.0.0.1, but its clients may be anyone), or its ``Host`` is a
name that is not a loopback address (a web page whose DNS name was rebound to 127.0.0.1 —
DNS rebinding — is same-origin to the browser, so only the name tells it from the app's own
page). Pages of other sites are refused before this by the origin guard
(:mod:`cosyvoice.server.origin_guard`).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from cosyvoice.errors import CosyVoiceError
from cosyvoice.settings import Settings
from cosyvoice.state_files import DamagedFile, read_text

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


class AdminError(CosyVoiceError):
    """Missing or wrong admin token."""

    http_status = 403


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address (``127.x.y.z``, ``::1``); a DNS name that only
    starts like one (``127.0.0.1.nip.io``) is not."""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_proxied(headers: Any) -> bool:
    """True when a request may come from beyond this machine although it reached the app
    on loopback: it carries a reverse proxy's client headers (any value), or its ``Host``
    names something other than a loopback address (DNS rebinding; see the module doc)."""
    if headers is None:
        return False
    if any(h in headers for h in PROXY_HEADERS):
        return True
    host = host_name(headers.get("host") or "")
    return bool(host) and not is_loopback(host)


def host_name(host: str) -> str:
    """``Host`` without its port: ``[::1]:7860`` → ``::1``, ``localhost:7860`` → ``localhost``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def resolve_admin_token(settings: Settings) -> str:
    """The configured token, else one kept in ``<run dir>/admin_token`` (mode 0600).

    The file survives restarts, so a page opened before a restart keeps working.
    """
    if settings.admin_token:
        return settings.admin_token
    path = Path(settings.pidfile).parent / "admin_token"
    token = read_text(path, "admin token", _check_token)
    if token:
        return token
    token = secrets.token_urlsafe(24)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    logger.warning("admin token generated into %s (set --admin-token to choose one)", path)
    return token


def _check_token(text: str) -> str:
    """A kept token: one line of printable ASCII without spaces (as generated or typed)."""
    token = text.strip()
    if not token or len(token) > 256 or not all("!" <= c <= "~" for c in token):
        raise DamagedFile("not one line of printable characters")
    return token


def token_from(x_admin_token: str | None, authorization: str | None) -> str | None:
    if x_admin_token:
        return x_admin_token
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:]
    return None
