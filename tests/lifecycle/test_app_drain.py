"""The real app under load and on SIGTERM: a full queue answers "busy", a drain lets the
in-flight synthesis finish (or refuses it retryably) and leaves no partial file.

One app, ``--concurrency 1 --queue-size 1``; the SIGTERM test ends it, so it runs last.
"""

from __future__ import annotations

import signal
import time
import urllib.request

import pytest
import soundfile as sf
from gradio_client import Client, handle_file

from tests.conftest import get_json, start_app, stop_app

pytestmark = pytest.mark.slow

TEXT = ("The committee met on Tuesday to review the budget. Several members asked for more "
        "time. The chair agreed to meet again next week.")
LONG = " ".join([TEXT] * 2)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("drain")
    # the default linger: the drained request's result is downloaded after the drain
    app = start_app(workdir, "--concurrency", "1", "--queue-size", "1",
                    "--drain-timeout-s", "120", "--drain-linger-s", "5")
    yield app
    stop_app(app)


def _args(mode="preset", text=TEXT, prompt=None):
    return (mode, text, "joe", prompt, "", 1.0, 7, 1.0)


def _metric(app, name: str) -> float:
    with urllib.request.urlopen(app.url + "/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def _wait_in_flight(app, timeout=60.0) -> None:
    deadline = time.time() + timeout
    while _metric(app, "cosyvoice_in_flight_requests") < 1:
        assert time.time() < deadline, "the synthesis never started"
        time.sleep(0.1)


def test_full_queue_answers_busy_not_hang(app):
    client = Client(app.url, verbose=False)
    t0 = time.time()
    jobs = [client.submit(*_args(), api_name="/generate") for _ in range(6)]
    outcomes = []
    for job in jobs:
        try:
            outcomes.append(("ok", job.result(timeout=180)))
        except Exception as e:  # gradio_client raises QueueError for a full queue
            outcomes.append(("err", str(e)))
    busy = [o for o in outcomes if o[0] == "err"]
    done = [o for o in outcomes if o[0] == "ok"]
    assert busy and done, outcomes
    assert all("try again" in msg.lower() for _, msg in busy), busy
    assert time.time() - t0 < 180
    assert app.ready()
    path, _ = client.predict(*_args(text="Back to normal."), api_name="/generate")
    assert sf.info(path).duration > 0.5
    ok = _metric(app, 'cosyvoice_requests_total{mode="preset",outcome="ok"}')
    assert ok == len(done) + 1


def test_sigterm_drains_in_flight_synthesis(app, real_female_prompt):
    client = Client(app.url, verbose=False)
    job = client.submit(*_args("clone", LONG, handle_file(str(real_female_prompt))),
                        api_name="/generate")
    _wait_in_flight(app)
    app.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    status, body = get_json(app.url + "/health/ready")
    assert status == 503 and body["status"] == "draining"
    with pytest.raises(Exception) as refused:
        Client(app.url, verbose=False).predict(*_args(text="One more, please."),
                                               api_name="/generate")
    assert "try again" in str(refused.value).lower()
    # The request running at SIGTERM ends well within the 120 s deadline: it must finish
    # (a refusal would be the drain dropping accepted work).
    path, status_text = job.result(timeout=150)
    info = sf.info(path)
    assert info.duration > 8 and info.frames > 0  # the whole text, fully written
    assert app.proc.wait(timeout=150) == 0
    assert not list(app.outputs.glob(".partial-*")), "a half-written file was left behind"
    for wav in app.outputs.glob("*.wav"):
        assert sf.info(wav).frames > 0
    assert not app.pidfile.exists()
