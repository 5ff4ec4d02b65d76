"""The app's own files read back from disk — batch jobs, the lexicon, saved voices, the
Kokoro voice space, caches, the restart log, the admin token — through one gate, so that a
damaged one never stops the service and is never silently emptied.

A file that cannot be used (not a regular file, unreadable, too large, not UTF-8, not JSON
or nested too deeply, or refused by its reader's check) is *set aside*: renamed in its
folder to ``<name>.damaged-<YYYYmmdd-HHMMSS>`` (``-2``, ``-3`` … when taken), logged as a
warning and listed by :func:`set_aside_files` (``/health/ready``'s ``set_aside``, the
Models tab, ``/metrics``). The reader then goes on as if the file were missing: a cache is
measured again, a job or a voice is no longer listed, the lexicon starts empty. The damaged
copy keeps its bytes under its new name, so a later write creates a fresh file beside it
and never overwrites it; nothing is deleted. Repair it and rename it back (or remove it)
by hand; the list is this process's and starts empty at each start.

A missing file is simply missing (None), unless the reader says it is required (a saved
voice's ``profile.json``): then the unit it belongs to is set aside.
"""

from __future__ import annotations

import logging
import os
import pickle
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from cosyvoice import bounded_json

logger = logging.getLogger(__name__)

T = TypeVar("T")
DAMAGED = ".damaged-"
MAX_BYTES = 64 * 2**20  # larger than any state file the app writes (a 5,000-item job.json)
MAX_LISTED = 200
# What a reader raises on data it cannot use (a check's from_dict meeting a wrong type
# raises TypeError, KeyError, AttributeError; torch.load raises RuntimeError, EOFError or
# an UnpicklingError).
DAMAGE_ERRORS: tuple[type[BaseException], ...] = (
    OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, EOFError,
    RuntimeError, pickle.UnpicklingError)


class DamagedFile(ValueError):
    """Raised by a reader's check: the data is not what the app wrote (names the field)."""


@dataclass(frozen=True)
class SetAside:
    """A file (or folder) found damaged and renamed away."""

    what: str  # "batch job", "the lexicon", "saved voice" …
    path: str  # where it was
    moved_to: str | None  # where it is now; None when it could not be renamed
    reason: str
    when: float


class _Registry:
    """The files this process set aside, oldest first (bounded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[SetAside] = []

    def add(self, item: SetAside) -> None:
        with self._lock:
            self._items.append(item)
            del self._items[:-MAX_LISTED]

    def items(self) -> list[SetAside]:
        with self._lock:
            return list(self._items)


# One list for the process, as logging's handlers are: every store reports here, and
# /health/ready, /metrics and the Models tab read it.
REGISTRY = _Registry()


def set_aside_files() -> list[dict[str, Any]]:
    """Every file set aside since this process started, oldest first."""
    return [asdict(i) for i in REGISTRY.items()]


def is_set_aside(path: str | os.PathLike) -> bool:
    """True for a name this module gave a damaged file (stores skip them when listing)."""
    return DAMAGED in Path(path).name


def set_aside(path: str | os.PathLike, what: str, reason: str) -> Path | None:
    """Rename ``path`` (a file, folder or link) to ``<name>.damaged-<stamp>`` beside it,
    log it and list it; returns the new path. None when it was gone already (another
    reader set it aside first: nothing is listed twice) or could not be renamed (listed,
    with the error)."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target, n = path.with_name(f"{path.name}{DAMAGED}{stamp}"), 1
    while os.path.lexists(target):
        n += 1
        target = path.with_name(f"{path.name}{DAMAGED}{stamp}-{n}")
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    except OSError as e:
        logger.error("%s %s is damaged (%s) and could not be set aside (%s); the app goes on "
                     "without it", what, path, reason, e.strerror or e)
        REGISTRY.add(SetAside(what, str(path), None, f"{reason}; not renamed: {e}",
                              time.time()))
        return None
    logger.warning("%s %s is damaged (%s): set aside as %s; the app goes on without it",
                   what, path, reason, target.name)
    REGISTRY.add(SetAside(what, str(path), str(target), reason, time.time()))
    return target


def read_checked(path: str | os.PathLike, what: str, parse: Callable[[Path], T], *,
                 unit: str | os.PathLike | None = None, required: bool = False,
                 max_bytes: int = MAX_BYTES,
                 errors: tuple[type[BaseException], ...] = DAMAGE_ERRORS) -> T | None:
    """``parse(path)``, or None when the file is missing or damaged. Damaged: not a regular
    file, over ``max_bytes``, or ``parse`` raised one of ``errors``; then ``unit`` (default:
    the file itself; a saved voice's folder) is set aside. ``required``: a missing file
    means the unit is damaged too."""
    path = Path(path)
    unit = Path(unit) if unit is not None else path
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if required and unit != path and os.path.lexists(unit):
            set_aside(unit, what, f"{path.name} is missing")
        return None
    except OSError as e:  # a link loop, a folder we may not search
        set_aside(unit, what, _describe(e))
        return None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        set_aside(unit, what, f"{path.name} is {kind}")
        return None
    if st.st_size > max_bytes:
        set_aside(unit, what, f"{path.name} is {st.st_size:,} bytes; this file is at most "
                  f"{max_bytes:,}")
        return None
    try:
        return parse(path)
    except errors as e:
        set_aside(unit, what, _describe(e))
        return None


def read_text(path: str | os.PathLike, what: str,
              check: Callable[[str], T] = lambda text: text, **options: Any) -> T | None:
    """The file as UTF-8 text through ``check`` (see :func:`read_checked`)."""
    return read_checked(path, what, lambda p: check(_utf8(p)), **options)


def read_json(path: str | os.PathLike, what: str,
              check: Callable[[Any], T] = lambda data: data,
              max_depth: int = bounded_json.MAX_DEPTH, **options: Any) -> T | None:
    """The file as JSON (UTF-8, nested at most ``max_depth``) through ``check``, which
    returns what the caller keeps and raises (:class:`DamagedFile`, or any of
    :data:`DAMAGE_ERRORS`) when the data is not what the app wrote."""
    return read_checked(path, what,
                        lambda p: check(bounded_json.loads(_utf8(p), max_depth)), **options)


def ensure_dir(path: str | os.PathLike, what: str) -> Path:
    """Make the folder ``path``; anything else in its place (a file, a broken link) is set
    aside first."""
    path = Path(path)
    if os.path.lexists(path) and not path.is_dir():
        set_aside(path, what, "a file is where its folder should be")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _utf8(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DamagedFile(f"not UTF-8 text (byte {e.start} of {len(data)})") from None


def _describe(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"cannot be read: {e.strerror}"
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__
