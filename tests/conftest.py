"""Shared fixtures: the real app started in a subprocess on a free port."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GRADIO_AUDIO = None


FILE_WEIGHTS = ROOT / "tests" / "file_weights.txt"


def _file_weights() -> dict[str, float]:
    weights = {}
    for line in FILE_WEIGHTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, path = line.split(maxsplit=1)
            weights[path] = float(seconds)
    return weights


def pytest_collection_modifyitems(config, items):
    """The heaviest files first (``tests/file_weights.txt``), each file's tests in their
    order. ``test.sh`` hands whole files to its workers in this order (``--dist loadfile
    --no-loadscope-reorder``; xdist's own order, most tests first, left the files with a few
    long tests — the fit across a restart, the GPU script — for the end, one worker alone)."""
    weights = _file_weights()
    items.sort(key=lambda item: -weights.get(item.nodeid.split("::")[0], 0.0))


CPU_LOG = os.environ.get("TEST_CPU_LOG")  # a folder: each worker writes its phases' CPU-s


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With ``TEST_CPU_LOG=DIR``: one line per test, ``cpu_s wall_s idle_s end_s nodeid``:
    the CPU of this worker and of the subprocesses it reaped meanwhile (an app stopped at a
    module's end counts to that module's last test), the machine's idle core-seconds over
    the test (all processes; the other worker's time shows in it too) and the time it ended,
    to find what a CI run spends its cores on and where they wait."""
    if not CPU_LOG:
        yield
        return
    t0, w0, i0 = os.times(), time.monotonic(), _idle_seconds()
    yield
    t1 = os.times()
    cpu = sum(t1[:4]) - sum(t0[:4])
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(CPU_LOG) / f"{name}.txt", "a", encoding="utf-8") as f:
        f.write(
            f"{cpu:.2f} {time.monotonic() - w0:.2f} {_idle_seconds() - i0:.2f} "
            f"{time.time():.1f} {item.nodeid}\n"
        )


def _idle_seconds() -> float:
    """The machine's idle core-seconds since boot (``/proc/stat``: idle + iowait), 0 elsewhere."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return 0.0
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def site_packages_file(package: str, *parts: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} not installed"
    return Path(spec.submodule_search_locations[0]).joinpath(*parts)


@pytest.fixture(scope="session")
def real_female_prompt() -> Path:
    """A real recording (Cate Blanchett, 8.4 s, 32 kHz mp3) shipped inside gradio."""
    return site_packages_file("gradio", "media_assets", "audio", "cate_blanch.mp3")


@pytest.fixture(scope="session")
def real_male_prompt() -> Path:
    """A real recording (Heath Ledger, 3.5 s, 32 kHz mp3) shipped inside gradio."""
    return site_packages_file("gradio", "media_assets", "audio", "heath_ledger.mp3")

@pytest.fixture(scope="session")
def oracle():
    """``run_oracle`` from tests/oracle/harness.py; skips when the reference is not beside the
    repo (or .venv-oracle is missing locally), but fails under CI=true when the reference is
    there and test.sh should have made its venv, or when ``COSYVOICE_ORACLE`` names a folder
    that does not hold it (a wrong path is a mistake to show, not a reason to skip)."""
    from tests.oracle.harness import missing_reason, oracle_dir, run_oracle

    reason = missing_reason()
    if reason:
        named = bool(os.environ.get("COSYVOICE_ORACLE"))
        if os.environ.get("CI") == "true" and (named or oracle_dir() is not None):
            pytest.fail(f"oracle unavailable in CI: {reason}")
        pytest.skip(reason)
    return run_oracle



def local_services(tmp: Path, **overrides):
    """The app's services (bootstrap: engine, manager, Synthesizer) in-process, with every
    path under ``tmp``; models load on first use."""
    from cosyvoice.bootstrap import build
    from cosyvoice.settings import Settings

    settings = Settings(outputs_dir=tmp / "outputs", cache_dir=tmp / "cache",
                        log_dir=tmp / "logs", pidfile=tmp / "app.pid",
                        voices_dir=tmp / "voices", jobs_dir=tmp / "jobs",
                        **{"lexicon_file": tmp / "lexicon.json", **overrides})
    settings.ensure_dirs()
    return build(settings, "cpu")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout: float = 5.0) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@dataclass
class RunningApp:
    url: str
    port: int
    proc: subprocess.Popen
    workdir: Path

    @property
    def outputs(self) -> Path:
        return self.workdir / "outputs"

    @property
    def pidfile(self) -> Path:
        return self.workdir / "run" / "app.pid"

    def ready(self) -> bool:
        status, body = get_json(self.url + "/health/ready")
        return status == 200 and body.get("ready") is True


def start_app(workdir: Path, *extra: str, timeout: float = 240.0) -> RunningApp:
    """The real app on a free port with every path under ``workdir``, once it is ready.
    No result-download linger after a drain unless ``extra`` sets one: each stop of an app
    that served would otherwise idle 1.5 s (the linger has its own tests)."""
    port = free_port()
    if "--drain-linger-s" not in extra:
        extra = (*extra, "--drain-linger-s", "0")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, str(ROOT / "app.py"), "--host", "127.0.0.1", "--port", str(port),
            "--outputs-dir", str(workdir / "outputs"), "--cache-dir", str(workdir / "cache"),
            "--log-dir", str(workdir / "logs"), "--pidfile", str(workdir / "run" / "app.pid"),
            "--voices-dir", str(workdir / "voices"), "--jobs-dir", str(workdir / "jobs"),
            "--lexicon-file", str(workdir / "lexicon.json"),
            *extra]
    log = open(workdir / "app.stdout.log", "ab")
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    app = RunningApp(f"http://127.0.0.1:{port}", port, proc, workdir)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app exited with {proc.returncode}; see {log.name}")
        try:
            if app.ready():
                return app
        except OSError:
            pass
        time.sleep(0.2)
    stop_app(app)
    raise RuntimeError(f"app not ready after {timeout} s; see {log.name}")


def stop_app(app: RunningApp, timeout: float = 30.0) -> int:
    if app.proc.poll() is None:
        app.proc.send_signal(signal.SIGTERM)
        try:
            app.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            app.proc.kill()
            app.proc.wait()
    return app.proc.returncode


def start_cosyvoice_app(workdir: Path, folder: Path, *extra: str,
                        timeout: float = 180.0) -> RunningApp:
    """The app with the CosyVoice3 engine (default) on ``folder`` and the offline engine,
    returned once both engines have settled (READY or FAILED): the optional CosyVoice model
    loads after the app is ready."""
    app = start_app(workdir, "--engine", "cosyvoice3", "--model-dir", str(folder), *extra)
    deadline = time.time() + timeout
    while time.time() < deadline:
        _, body = get_json(app.url + "/api/v1/engines")
        if all(e["state"] in ("READY", "FAILED") for e in body.get("engines", [])):
            return app
        time.sleep(0.5)
    stop_app(app)
    raise RuntimeError(f"engines not settled after {timeout} s; see {workdir}/app.stdout.log")


@pytest.fixture(scope="session")
def running_app(tmp_path_factory) -> RunningApp:
    workdir = tmp_path_factory.mktemp("app")
    app = start_app(workdir)
    yield app
    stop_app(app)


def require_kokoro() -> Path:
    """The installed Kokoro folder (models/kokoro). Skips only where setup could not fetch
    the voices because npm is missing; with npm present, absent files are a failure."""
    import shutil

    from cosyvoice.acoustic.kokoro import default_dir, installed_voices

    if not installed_voices():
        if shutil.which("npm") is None:
            pytest.skip("Kokoro files are absent: npm is not installed, so setup could not "
                        "fetch the kokoro-js voice packs (apt-get install npm; bash run.sh "
                        "--setup-only)")
        pytest.fail("Kokoro files are absent although npm is installed: run "
                    "`bash run.sh --setup-only`")
    return default_dir()


@pytest.fixture(scope="session")
def cv_folder_v2(tmp_path_factory) -> Path:
    """A tiny CosyVoice2 folder in the released layout made by our own code (no oracle)."""
    from tests.cosyvoice_folder import make_folder

    return make_folder(tmp_path_factory.mktemp("cv2-ours"), 2, seed=2)


@pytest.fixture(scope="session")
def cv_folder_v3(tmp_path_factory) -> Path:
    """A tiny CosyVoice3 folder in the released layout made by our own code (no oracle)."""
    from tests.cosyvoice_folder import make_folder

    return make_folder(tmp_path_factory.mktemp("cv3-ours"), 3, seed=3)
