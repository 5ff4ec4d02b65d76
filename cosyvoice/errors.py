"""Typed errors with messages a user can act on.

The core raises these; the UI turns them into ``gr.Error`` and the API into 4xx JSON of
one shape, :func:`error_body`.
"""

from __future__ import annotations

import math


class CosyVoiceError(ValueError):
    """Base class: a request the engine cannot serve, with a user-facing message."""

    http_status = 400


class BodyError(CosyVoiceError):
    """The request body cannot be parsed: not JSON, nested too deeply, bad multipart."""

    http_status = 400


class MediaTypeError(CosyVoiceError):
    """The body's ``Content-Type`` is not one the route reads (JSON, a multipart form)."""

    http_status = 415


class TextError(CosyVoiceError):
    """The text to synthesize is empty, too long or unspeakable."""

    http_status = 422


class PromptError(CosyVoiceError):
    """The prompt recording is unusable (format, length, silence, clipping ...)."""

    http_status = 422


class ModelError(CosyVoiceError):
    """A model could not be loaded or is not available."""

    http_status = 503


class ModelActionError(CosyVoiceError):
    """An admin action that cannot apply to that model (e.g. loading a built-in model from
    a folder): retrying will not help, so a 422 rather than a 503."""

    http_status = 422


class BusyError(CosyVoiceError):
    """The queue is full or the app is draining; retry after ``retry_after_s`` seconds.

    Build it with :meth:`retry_in`, so that the message and the ``Retry-After`` header
    say the same number.
    """

    http_status = 503

    def __init__(self, message: str, retry_after_s: int = 5) -> None:
        super().__init__(message)
        self.retry_after_s = max(1, int(retry_after_s))

    @classmethod
    def retry_in(cls, seconds: float, why: str) -> BusyError:
        """``"<why>; please try again in <n> s."`` with ``retry_after_s == n`` (rounded up)."""
        n = max(1, math.ceil(seconds))
        return cls(f"{why}; please try again in {n} s.", retry_after_s=n)


class QueueFullError(BusyError):
    """Every synthesis slot and queue place is taken; retry in a few seconds."""

    http_status = 429


class UploadTooLargeError(CosyVoiceError):
    """An upload is over the size limit."""

    http_status = 413


class NotFoundError(CosyVoiceError):
    """A named thing (saved voice, model) does not exist."""

    http_status = 404


class ConflictError(CosyVoiceError):
    """The request clashes with what exists (a name already taken, a full store)."""

    http_status = 409


class StorageError(CosyVoiceError):
    """The disk that holds outputs (or uploads) is full or refuses the write."""

    http_status = 507


def error_body(status: int, message: str, kind: str) -> dict:
    """The JSON of every error answer, on every route (OpenAI's shape, so that its client
    shows the message): ``{"error": {"message", "type", "code"}}``."""
    return {"error": {"message": message, "type": kind, "code": status}}
