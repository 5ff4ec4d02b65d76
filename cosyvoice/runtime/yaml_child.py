"""A model folder's YAML read in a short-lived child process, in case a bound is missed.

:func:`read_yaml` reads the file here — opened without blocking, refused unless it is a regular
file within the size bound, so a FIFO, a device (a link to ``/dev/zero``) or a directory is
never read — and hands its text to a fresh interpreter (``python -I -S``) that evaluates it with
the bounded reader (yaml_data.py) under a memory and CPU rlimit and writes plain data back as
JSON (never pickle). This process only waits for it, with the GIL released, up to a wall-clock
timeout, then kills it: whatever the YAML holds, the server keeps answering, and the reason
names the file. The cost is one interpreter start per folder load: 0.26–0.29 s for a released
YAML against 0.04 s in process, at load average 12–14 on 2 cores (docs/cosyvoice-runtime.md,
"Hostile folders").
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from cosyvoice.files import UnreadableFile, read_text_bounded
from cosyvoice.runtime.yaml_data import LIMITS, HParamsError, Limits, Tagged, load_yaml

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]  # holds the cosyvoice package
TIMEOUT_S = 10.0  # wall clock for the child (a released YAML: 0.3-0.7 s at load average 12-20)
MEMORY_BYTES = 512 * 2**20  # the child's address space (its peak RSS: 17 MB)
MAX_OUTPUT_BYTES = 64 * 2**20
# -I -S: no environment variables, no site-packages and no .pth files run; the path holds our
# package and the folder PyYAML was imported from, nothing else.
_CHILD = ("import sys; sys.path[:0] = sys.argv[1:3]; "
          "from cosyvoice.runtime.yaml_child import child_main; child_main()")


def read_yaml(path: Path, limits: Limits = LIMITS, timeout_s: float = TIMEOUT_S,
              memory_bytes: int = MEMORY_BYTES) -> dict:
    """The YAML at ``path`` as plain data (yaml_data.load_yaml's), evaluated in a child
    process; :class:`HParamsError` for a file that is not a regular file within the bounds,
    a YAML the reader refuses, or a child that runs past ``timeout_s`` or its memory."""
    try:
        text = read_text_bounded(path, limits.max_bytes)
    except UnreadableFile as e:
        raise HParamsError(f"{e} (the released file is 7 kB of text)") from e
    argv = [sys.executable, "-I", "-S", "-c", _CHILD, str(ROOT),
            str(Path(yaml.__file__).resolve().parents[1]),
            json.dumps(dataclasses.asdict(limits)), str(memory_bytes), str(int(timeout_s) + 1)]
    try:
        proc = subprocess.run(argv, input=text.encode("utf-8"), capture_output=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as e:
        raise HParamsError(f"evaluating it took longer than {timeout_s:g} s and was stopped "
                           "(the released file takes under a second)") from e
    except OSError as e:
        raise HParamsError(f"the YAML reader process could not start: {e}") from e
    return _answer(proc, memory_bytes)


def _answer(proc: subprocess.CompletedProcess, memory_bytes: int) -> dict:
    """The child's JSON answer as data, or the reason it gave none."""
    if proc.returncode == 0 and 0 < len(proc.stdout) <= MAX_OUTPUT_BYTES:
        try:
            answer = json.loads(proc.stdout, object_hook=_from_json)
        except ValueError as e:
            raise HParamsError(f"the YAML reader's answer is not readable: {e}") from e
        if "error" in answer:
            raise HParamsError(answer["error"])
        return answer["doc"]
    if proc.returncode == 0 and len(proc.stdout) > MAX_OUTPUT_BYTES:
        raise HParamsError(f"its data passes {MAX_OUTPUT_BYTES // 2**20} MB")
    logger.warning("YAML reader exited with %s: %s", proc.returncode,
                   proc.stderr.decode("utf-8", "replace").strip()[-300:])
    if proc.returncode == -signal.SIGXCPU:
        raise HParamsError("evaluating it used more than its CPU time and was stopped")
    if b"MemoryError" in proc.stderr:
        raise HParamsError(f"evaluating it needed more than {memory_bytes // 2**20} MB "
                           "and was stopped")
    raise HParamsError(f"the YAML reader failed (exit status {proc.returncode})")


def to_json(value: Any) -> Any:
    """Plain data as JSON values: a :class:`Tagged` as ``{"!tagged": [kind, target, kwargs,
    args]}``, a mapping whose keys are not all plain strings as ``{"!map": [[k, v], ...]}``."""
    if isinstance(value, Tagged):
        return {"!tagged": [value.kind, value.target, to_json(value.kwargs),
                            to_json(value.args)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("!") for k in value):
            return {k: to_json(v) for k, v in value.items()}
        return {"!map": [[to_json(k), to_json(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise HParamsError(f"a value of type {type(value).__name__} (e.g. !!binary, !!set) is not "
                       "a hyper-parameter")


def _from_json(obj: dict) -> Any:
    if set(obj) == {"!tagged"}:
        kind, target, kwargs, args = obj["!tagged"]
        return Tagged(kind, target, kwargs, args)
    if set(obj) == {"!map"}:
        return {(tuple(k) if isinstance(k, list) else k): v for k, v in obj["!map"]}
    return obj


def child_main() -> None:
    """The child: niceness 10 and rlimits first, then the text on stdin evaluated;
    ``{"doc": ...}`` or ``{"error": "..."}`` on stdout. argv: our root, PyYAML's folder,
    limits (JSON), address-space bytes, CPU seconds."""
    import os
    import resource

    os.nice(10)  # background work: the app's serving threads come first on a busy CPU
    memory, cpu = int(sys.argv[4]), int(sys.argv[5])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    limits = Limits(**json.loads(sys.argv[3]))
    text = sys.stdin.buffer.read().decode("utf-8")
    try:
        answer: dict = {"doc": to_json(load_yaml(text, limits))}
    except HParamsError as e:
        answer = {"error": str(e)}
    except RecursionError:
        answer = {"error": "values nested too deep to read"}
    except MemoryError:
        raise  # the parent names the memory limit
    except Exception as e:  # noqa: BLE001 - a reader bug still gives the folder a reason
        answer = {"error": f"cannot be read ({type(e).__name__}: {e})"[:300]}
    sys.stdout.buffer.write(json.dumps(answer).encode("ascii"))
    sys.stdout.buffer.flush()
