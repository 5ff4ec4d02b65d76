"""Files written atomically: a reader (or a crash) never sees a half-written file under
its final name. (Audio has its own writer, :func:`cosyvoice.audio.io.write_wav_atomic`.)"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to a temp file in the same folder, fsync, rename over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=".partial-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
