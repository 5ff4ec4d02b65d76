"""Run the reference implementation (the test oracle) in its own interpreter and get tensors back.

The oracle lives outside the repository (``shared/oracles/cosyvoice`` in a folder above the
checkout, or ``$COSYVOICE_ORACLE``) and runs only under ``.venv-oracle/bin/python`` (made by
``tests/oracle/setup_oracle_env.sh``), in a subprocess: its ``cosyvoice`` package has the same
name as ours, so it is never imported into the pytest process.

    result = run_oracle("llm_decode.py", folder=str(path), steps=50)

runs ``tests/oracle/scripts/llm_decode.py``'s ``main(**kwargs) -> dict``; arguments and results
travel through temporary ``.pt`` files (``torch.save`` / ``torch.load(weights_only=True)``), so they
may be tensors, numbers, strings, and lists/dicts of those.

One oracle interpreter per pytest process (``scripts/_server.py``) imports the reference once
and runs each job in a forked child: a job starts as a fresh interpreter would, without the
imports' ~8 CPU-s (a CI run has about a dozen jobs per worker).
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import subprocess
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent.parent
HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
STUBS = HERE / "stubs"
ORACLE_ENV = ROOT / ".venv-oracle"
ORACLE_PYTHON = ORACLE_ENV / "bin" / "python"


class OracleError(RuntimeError):
    """The oracle's script failed; the message carries its stderr."""


def oracle_dir() -> Path | None:
    """The reference's root (holding ``cosyvoice/`` and ``configs/``), or None if not found."""
    env = os.environ.get("COSYVOICE_ORACLE")
    if env:
        return Path(env) if (Path(env) / "cosyvoice").is_dir() else None
    for parent in [ROOT, *ROOT.parents]:
        candidate = parent / "shared" / "oracles" / "cosyvoice"
        if (candidate / "cosyvoice").is_dir():
            return candidate
    return None


def missing_reason() -> str | None:
    """Why the oracle cannot run here, or None when it can."""
    if oracle_dir() is None:
        if os.environ.get("COSYVOICE_ORACLE"):
            return (f"COSYVOICE_ORACLE={os.environ['COSYVOICE_ORACLE']} holds no cosyvoice/ "
                    "package (the reference implementation)")
        return "the reference implementation (shared/oracles/cosyvoice) is not found above the repo"
    stamp = ORACLE_ENV / ".oracle-stamp"
    if not ORACLE_PYTHON.exists() or not stamp.exists():
        return ".venv-oracle is missing: run `bash tests/oracle/setup_oracle_env.sh` (test.sh does)"
    return None


_server: subprocess.Popen | None = None


def _oracle_server() -> subprocess.Popen:
    """The running oracle interpreter of this process, started on first use."""
    global _server
    if _server is None or _server.poll() is not None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(oracle_dir()), str(STUBS)])
        env.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))
        _server = subprocess.Popen(
            [str(ORACLE_PYTHON), "-W", "ignore", str(SCRIPTS / "_server.py")], cwd=SCRIPTS,
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        atexit.register(_stop_server, _server)
    return _server


def _stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        try:
            os.killpg(server.pid, signal.SIGKILL)  # the server and a job's child
        except ProcessLookupError:
            pass
        server.wait()


def run_oracle(script: str, timeout: float = 600, **kwargs) -> dict:
    """Run ``scripts/<script>``'s ``main(**kwargs)`` in the oracle env; return its dict."""
    reason = missing_reason()
    if reason:
        raise OracleError(reason)
    path = SCRIPTS / script
    if not path.is_file():
        raise FileNotFoundError(path)
    with tempfile.TemporaryDirectory(prefix="oracle-") as tmp:
        args, out, err = Path(tmp) / "args.pt", Path(tmp) / "out.pt", Path(tmp) / "err.txt"
        torch.save(kwargs, args)
        server = _oracle_server()
        server.stdin.write(f"{path}\t{args}\t{out}\t{err}\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], timeout)
        answer = server.stdout.readline().strip() if ready else ""
        if not answer:
            _stop_server(server)
            raise OracleError(f"oracle script {script} did not answer in {timeout:g} s"
                              if not ready else f"the oracle interpreter exited "
                              f"({server.returncode}) running {script}")
        if answer != "0":
            detail = err.read_text() if err.exists() else "(no traceback)"
            raise OracleError(f"oracle script {script} failed ({answer}):\n{detail[-4000:]}")
        return torch.load(out, weights_only=True)
