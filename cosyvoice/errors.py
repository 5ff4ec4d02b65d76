"""Typed errors with messages a user can act on.

The core raises these; the UI turns them into ``gr.Error`` and the API into 4xx JSON.
"""


class CosyVoiceError(ValueError):
    """Base class: a request the engine cannot serve, with a user-facing message."""

    http_status = 400


class TextError(CosyVoiceError):
    """The text to synthesize is empty, too long or unspeakable."""

    http_status = 422


class PromptError(CosyVoiceError):
    """The prompt recording is unusable (format, length, silence, clipping ...)."""

    http_status = 422


class ModelError(CosyVoiceError):
    """A model could not be loaded or is not available."""

    http_status = 503


class BusyError(CosyVoiceError):
    """The queue is full or the app is draining; retry later."""

    http_status = 503


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
