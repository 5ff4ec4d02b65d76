"""RequestTracker: in-flight counting, drain refusal, outcomes, latency, slow streak."""

from __future__ import annotations

import threading
import time

import pytest

from cosyvoice.errors import BusyError, ModelError, TextError
from cosyvoice.lifecycle.drain import DRAINING_WHY, LatencyHistogram, RequestTracker


def test_counts_outcomes_by_mode():
    tr = RequestTracker()
    with tr.track("preset"):
        pass
    for exc, mode in ((TextError("empty"), "preset"), (ModelError("no vocoder"), "clone"),
                      (RuntimeError("bug"), "clone")):
        with pytest.raises(type(exc)), tr.track(mode):
            raise exc
    snap = tr.snapshot()
    assert snap.outcomes == {("preset", "ok"): 1, ("preset", "rejected"): 1,
                             ("clone", "error"): 2}
    assert snap.in_flight == 0
    assert snap.latency["preset"].cumulative()[-1] == ("+Inf", 2)


def test_draining_refuses_with_retryable_error_and_counts_it():
    tr = RequestTracker()
    tr.draining.set()
    with pytest.raises(BusyError) as info, tr.track("clone"):
        pytest.fail("must not run while draining")
    n = info.value.retry_after_s
    assert str(info.value) == f"{DRAINING_WHY}; please try again in {n} s."
    assert tr.snapshot().outcomes == {("clone", "refused"): 1}


def test_wait_idle_waits_for_in_flight_work():
    tr = RequestTracker()
    entered, release = threading.Event(), threading.Event()

    def work():
        with tr.track("preset"):
            entered.set()
            release.wait(5)

    th = threading.Thread(target=work)
    th.start()
    assert entered.wait(5)
    assert tr.in_flight == 1
    assert tr.wait_idle(0.2) is False  # still running: the deadline passes
    tr.draining.set()  # new work is refused, the running one may finish
    with pytest.raises(BusyError), tr.track("preset"):
        pass
    threading.Timer(0.3, release.set).start()
    t0 = time.monotonic()
    assert tr.wait_idle(5) is True
    assert 0.2 < time.monotonic() - t0 < 4
    th.join()
    assert tr.snapshot().outcomes[("preset", "ok")] == 1


def test_generator_abandoned_midway_counts_as_cancelled():
    tr = RequestTracker()

    def gen():
        with tr.track("preset"):
            yield 1
            yield 2

    g = gen()
    next(g)
    assert tr.in_flight == 1
    g.close()
    assert tr.in_flight == 0 and tr.snapshot().outcomes == {("preset", "cancelled"): 1}


def test_slow_streak_counts_trailing_slow_requests():
    tr = RequestTracker()
    for seconds in (0.0, 0.06, 0.06):
        with tr.track("preset"):
            time.sleep(seconds)
    assert tr.slow_streak(0.05) == 2
    with tr.track("preset"):
        pass
    assert tr.slow_streak(0.05) == 0


def test_histogram_is_cumulative():
    h = LatencyHistogram(bounds=(1.0, 10.0), counts=[0, 0, 0])
    for s in (0.5, 0.7, 5.0, 50.0):
        h.observe(s)
    assert h.cumulative() == [("1.0", 2), ("10.0", 3), ("+Inf", 4)]
    assert h.total_s == pytest.approx(56.2)


def test_drain_guard_refuses_new_work_but_not_health():
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from cosyvoice.lifecycle.drain import DrainGuard

    app = FastAPI()
    tracker = RequestTracker()
    tracker.relaunch_s = lambda: 13.0  # restarts.log: restarts take 13 s here
    app.add_middleware(DrainGuard, tracker=tracker)

    @app.post("/gradio_api/queue/join")
    def join() -> dict:
        return {"event_id": "e1"}

    @app.post("/api/v1/tts")
    def tts() -> dict:
        return {"ok": True}

    @app.get("/health/live")
    def live() -> dict:
        return {"status": "alive"}

    client = TestClient(app)
    assert client.post("/gradio_api/queue/join").status_code == 200
    tracker.begin_drain(30.0)  # nothing accepted: the shutdown (2 s) and the relaunch
    for path in ("/gradio_api/queue/join", "/api/v1/tts"):
        r = client.post(path)
        assert r.status_code == 503 and r.headers["retry-after"] == "15"
        assert r.json() == {"error": {
            "message": f"{DRAINING_WHY}; please try again in 15 s.", "type": "BusyError",
            "code": 503}}
    assert client.get("/health/live").status_code == 200


def _drain_server(tracker: RequestTracker, linger_s: float):
    """A real uvicorn server (DrainingServer) on a free port, run in a thread."""
    import uvicorn
    from fastapi import FastAPI

    from cosyvoice.lifecycle.drain import DrainGuard, DrainingServer
    from tests.conftest import free_port

    app = FastAPI()
    app.add_middleware(DrainGuard, tracker=tracker)

    @app.get("/file")
    def file() -> dict:
        return {"audio": "result.wav"}

    port = free_port()
    server = DrainingServer(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"), tracker, 30.0, linger_s)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}/file"
    deadline = time.time() + 20
    while not server.server.started:
        assert time.time() < deadline, "server did not start"
        time.sleep(0.05)
    return server, thread, url


def _get(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status


def test_drain_serves_result_downloads_after_the_last_synthesis_ends():
    """The in-flight job's client fetches its file after the job ends: the server must
    still answer then (CI once saw "connection refused" on that download), and exit
    once downloads stop."""
    import signal

    tracker = RequestTracker()
    tracker.trim_after_requests = False
    release, started = threading.Event(), threading.Event()

    def synthesis() -> None:
        with tracker.track("clone"):
            started.set()
            release.wait(10)

    job = threading.Thread(target=synthesis)
    job.start()
    started.wait(5)
    server, thread, url = _drain_server(tracker, linger_s=5.0)
    server.handle_exit(signal.SIGTERM, None)
    time.sleep(0.3)
    release.set()
    job.join(5)
    t_end = time.monotonic()
    for _ in range(3):  # downloads 0.6 s apart, the first 0.6 s after the end is still served
        time.sleep(0.6)
        assert _get(url) == 200
    thread.join(10)
    assert not thread.is_alive(), "the server did not exit after the downloads"
    # the last download came at ~1.8 s; the cap is 5 s of linger
    assert time.monotonic() - t_end < 5.0 + 1.0


def test_drain_with_nothing_in_flight_does_not_linger():
    import signal

    tracker = RequestTracker()
    server, thread, url = _drain_server(tracker, linger_s=5.0)
    assert _get(url) == 200
    t0 = time.monotonic()
    server.handle_exit(signal.SIGTERM, None)
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - t0 < 0.9, "no synthesis ended in the drain: nothing to wait for"
