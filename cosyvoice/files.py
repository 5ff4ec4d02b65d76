"""Files written atomically: a reader (or a crash) never sees a half-written file under
its final name. (Audio has its own writer, :func:`cosyvoice.audio.io.write_wav_atomic`.)"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str, durable: bool = True) -> Path:
    """Write ``text`` (UTF-8) to a temp file in ``path``'s folder (made if missing), then
    rename it over ``path``; ``durable`` fsyncs first (records a user would lose: voices,
    jobs, the lexicon; not files remade on the next request). OSError as raised."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".partial-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: Path, data: Any, indent: int | None = 1,
                      durable: bool = True) -> Path:
    """``data`` as JSON (non-ASCII kept, a final newline) through :func:`write_text_atomic`."""
    text = json.dumps(data, ensure_ascii=False, indent=indent) + "\n"
    return write_text_atomic(path, text, durable)
