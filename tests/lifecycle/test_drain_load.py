"""SIGTERM under load, in the real app (issue #23, 2; issue #35, 8): every accepted
request — running or queued — either finishes, or is answered at once (within a second of
the drain's start) with a retryable 503 whose Retry-After is the number its message says
and covers the whole restart as this machine's restart record says it takes. None is
dropped, none is kept and then refused at the deadline, nothing half-written is left in
outputs/.

``--concurrency 1 --queue-size 8 --drain-timeout-s 8``: a short request runs, eight long
ones wait. The only syntheses measured before them are short: the drain must project
each by its size (counting every request as long as the last one kept them all, and
refused most of them at the deadline). And a synthesis still running when the deadline
passes is answered 503 then.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
import signal
import time

import httpx
import pytest

from tests.conftest import get_json, start_app, stop_app
from tests.server.test_error_shape import assert_error_shape

pytestmark = pytest.mark.slow

DRAIN_S = 8
N = 9
VOICE = "joe"  # the deadline and N are sized to joe's speed on 2 cores
SHORT = "The committee met on Tuesday."
TEXT = ("The committee met on Tuesday to review the budget. Several members asked for more "
        "time before the vote. The chair agreed to meet again next week.")
LONG = " ".join([TEXT] * 2)
RELAUNCH_S = 40.0  # what the restart record says a relaunch takes on this "machine"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("drain_load")
    app = start_app(workdir, "--concurrency", "1", "--queue-size", "8",
                    "--drain-timeout-s", str(DRAIN_S))
    try:  # optional models load after ready, beside the first requests: let them settle
        _wait(lambda: all(m["state"] in ("READY", "FAILED") or m.get("lazy") for m in get_json(
            app.url + "/health/ready", timeout=60)[1]["models"]), "models never settled", 240)
        yield app
    finally:
        stop_app(app)


def _post(url: str, seed: int, text: str = LONG) -> tuple[httpx.Response | None, float]:
    try:
        r = httpx.post(url + "/api/v1/tts", json={"text": text, "seed": seed, "voice": VOICE},
                       timeout=300)
    except httpx.HTTPError:
        return None, time.monotonic()
    return r, time.monotonic()


def _metric(url: str, name: str) -> float:
    for line in httpx.get(url + "/metrics", timeout=30).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def _in_flight(url: str) -> float:
    return _metric(url, "cosyvoice_in_flight_requests")


def _wait(condition, what: str, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, what
        time.sleep(0.05)


def test_sigterm_under_load_finishes_or_refuses_at_once(app):
    from cosyvoice.lifecycle.restarts import RestartLog

    for seconds in (RELAUNCH_S - 1, RELAUNCH_S, RELAUNCH_S + 1):
        RestartLog(app.workdir / "run" / "restarts.log").record("manual", 1, 2.0, seconds)
    for seed in (0, 1):  # the only syntheses measured before the long ones: short ones
        warm, _ = _post(app.url, seed, SHORT)
        assert warm is not None and warm.status_code == 200
    with cf.ThreadPoolExecutor(N) as pool:
        # A short one runs (it ends within the deadline however loaded the machine is),
        # N - 1 long ones wait behind it.
        jobs = [pool.submit(_post, app.url, 2, SHORT)]
        _wait(lambda: _in_flight(app.url) >= 1, "nothing started")
        jobs += [pool.submit(_post, app.url, i + 3) for i in range(N - 1)]
        # Queued: every request not yet answered is admitted (running or waiting).
        _wait(lambda: _metric(app.url, "cosyvoice_queue_depth") + _in_flight(app.url)
              >= N - sum(j.done() for j in jobs), "the long ones never queued")
        t_term = time.monotonic()
        app.proc.send_signal(signal.SIGTERM)
        answers = [j.result() for j in jobs]
    assert all(r is not None for r, _ in answers), "a request was dropped"
    ok = [r for r, _ in answers if r.status_code == 200]
    refused = [(r, t) for r, t in answers if r.status_code == 503]
    seen = [(r.status_code, round(t - t_term, 1)) for r, t in answers]
    assert len(ok) + len(refused) == N, seen
    assert ok and refused, f"the deadline should cover some, not all: {seen}"
    late = [round(t - t_term, 1) for _, t in refused if t - t_term >= 1.5]
    assert not late, f"kept, then refused {late} s after SIGTERM: {seen}"
    for r, _ in refused:
        err = assert_error_shape(r, (503,))
        n = int(re.search(r"try again in (\d+) s", err["message"]).group(1))
        assert r.headers["retry-after"] == str(n)
        # The kept work, the linger and the shutdown, then the relaunch as recorded.
        assert RELAUNCH_S + 2 <= n <= RELAUNCH_S + 2 + DRAIN_S + 6, n
    assert app.proc.wait(timeout=60) == 0
    assert not list(app.outputs.glob(".partial-*"))


@pytest.mark.parametrize("route", ["/api/v1/tts", "/v1/audio/speech"])
def test_work_still_running_at_the_deadline_gets_a_503_not_a_dropped_connection(
        tmp_path_factory, route):
    """A synthesis longer than the drain deadline: answered 503 (retryable, in the error
    shape) when the deadline passes, instead of a connection closed without an answer."""
    workdir = tmp_path_factory.mktemp("drain_short")
    app = start_app(workdir, "--concurrency", "1", "--queue-size", "0",
                    "--drain-timeout-s", "1")
    try:
        long_text = " ".join([TEXT] * 6)
        body = {"text": long_text} if route == "/api/v1/tts" else {"input": long_text,
                                                                    "response_format": "wav"}
        with cf.ThreadPoolExecutor(1) as pool:
            job = pool.submit(httpx.post, app.url + route, json=body, timeout=120)
            deadline = time.time() + 60
            while _in_flight(app.url) < 1:
                assert time.time() < deadline, "nothing started"
                time.sleep(0.05)
            t_term = time.monotonic()
            app.proc.send_signal(signal.SIGTERM)
            r = job.result()
        err = assert_error_shape(r, (503,))
        assert time.monotonic() - t_term < 1 + 1.5
        n = int(re.search(r"try again in (\d+) s", err["message"]).group(1))
        assert r.headers["retry-after"] == str(n)
        assert app.proc.wait(timeout=60) == 0
        assert not list(app.outputs.glob(".partial-*"))
    finally:
        stop_app(app)
