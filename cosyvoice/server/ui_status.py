"""The Synthesis tab's status line: a click taken, and why a generation failed.

A raised ``gr.Error`` updates no output by itself, so each browser session's latest failure
is remembered (:data:`FAILURES`) for the status line to show.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import gradio as gr

from cosyvoice.server.texts import t

logger = logging.getLogger(__name__)


class SessionFailures:
    """The latest failure message of each browser session (bounded), so that the status
    line can show it: a raised gr.Error updates no output by itself."""

    def __init__(self, size: int = 512) -> None:
        self._messages: OrderedDict[str, str] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def note(self, request: gr.Request | None, message: str) -> None:
        key = getattr(request, "session_hash", None)
        if key:
            with self._lock:
                self._messages[key] = message
                self._messages.move_to_end(key)
                while len(self._messages) > self._size:
                    self._messages.popitem(last=False)

    def pop(self, request: gr.Request | None) -> str | None:
        with self._lock:
            return self._messages.pop(getattr(request, "session_hash", None) or "", None)


FAILURES = SessionFailures()


def user_error(message: str, where: str, request: gr.Request | None = None) -> gr.Error:
    """A user's mistake for the UI: one INFO line in the log, no traceback (Gradio prints
    one for every gr.Error unless told not to); faults keep theirs. Remembered for the
    session's status line."""
    logger.info("%s refused: %s", where, message)
    FAILURES.note(request, message)
    return gr.Error(message, print_exception=False)


def working_status(lang: str | None = None):
    """First step of a Generate click: the status says the click was taken, and the
    previous result is cleared, so nothing stale stays on screen if this one fails."""
    return t("working", lang or "en"), None


def failed_status(lang: str | None = None, request: gr.Request = None) -> str:
    """After a failed generation: the status line shows why."""
    message = FAILURES.pop(request) or t("failed_unknown", lang or "en")
    return t("failed", lang or "en").format(message=message)
