"""SynthesisGate: bounded admission, first come first served, and the drain's promise —
accepted work finishes within the deadline or is refused at once with an honest
Retry-After (real threads, a real RequestTracker; each "synthesis" sleeps, as long as its
text's size says)."""

from __future__ import annotations

import math
import re
import threading
import time

import pytest

from cosyvoice.errors import BusyError, QueueFullError
from cosyvoice.lifecycle.drain import SHUTDOWN_S, RequestTracker
from cosyvoice.lifecycle.gate import SAFETY, SynthesisGate

WORK_S = 0.4
RELAUNCH_S = 6.0  # what restarts.log would say a relaunch takes


def _tracker(history_s: float = WORK_S) -> RequestTracker:
    tr = RequestTracker()
    tr.trim_after_requests = False
    tr.relaunch_s = lambda: RELAUNCH_S
    with tr.track("preset"):  # one finished synthesis: the estimate
        time.sleep(history_s)
    return tr


class Client(threading.Thread):
    """One request of ``size`` characters through the gate: records its outcome and when
    it came."""

    def __init__(self, gate: SynthesisGate, work_s: float = WORK_S, size: int = 0) -> None:
        super().__init__(daemon=True)
        self.gate, self.work_s, self.size = gate, work_s, size
        self.outcome: str | BusyError | None = None
        self.started = threading.Event()
        self.answered_at = 0.0

    def run(self) -> None:
        try:
            with self.gate.slot(self.size), self.gate.tracker.track("preset"):
                self.started.set()
                time.sleep(self.work_s)
            self.outcome = "ok"
        except BusyError as e:
            self.outcome = e
        self.answered_at = time.monotonic()


def _start(gate: SynthesisGate, n: int, work_s: float = WORK_S, size: int = 0
           ) -> list[Client]:
    clients = []
    for _ in range(n):
        c = Client(gate, work_s, size)
        c.start()
        clients.append(c)
        time.sleep(0.02)  # a defined arrival order
    return clients


def _message_number(e: BusyError) -> int:
    return int(re.search(r"try again in (\d+) s", str(e)).group(1))


def test_full_gate_refuses_with_retry_after_in_the_message():
    gate = SynthesisGate(1, 1, _tracker())
    clients = _start(gate, 2)
    with pytest.raises(QueueFullError) as info, gate.slot():
        pytest.fail("a third request must not get in")
    assert info.value.retry_after_s == _message_number(info.value) == 1  # ceil(0.4 s)
    for c in clients:
        c.join(5)
    assert [c.outcome for c in clients] == ["ok", "ok"]
    assert clients[0].answered_at < clients[1].answered_at  # first come, first served


def test_drain_keeps_what_fits_the_deadline_and_refuses_the_rest_at_once():
    tr = _tracker()
    gate = SynthesisGate(1, 5, tr)
    clients = _start(gate, 4)  # one running, three waiting
    assert clients[0].started.wait(2)
    t0 = time.monotonic()
    # Each is planned at 0.4 s × SAFETY = 0.6 s: the running one ends by ~0.6 s, the next
    # by ~1.2 s; the third (~1.8 s) cannot make 1.5 s.
    tr.begin_drain(1.5)
    for c in clients:
        c.join(5)
    assert [c.outcome for c in clients[:2]] == ["ok", "ok"]
    for c in clients[2:]:
        assert isinstance(c.outcome, BusyError)
        assert c.answered_at - t0 < 0.1, "refused work must be answered at once"
        # Retry-After: the kept work's planned end (~1.2 s) + shutdown + the relaunch.
        assert c.outcome.retry_after_s == _message_number(c.outcome)
        assert c.outcome.retry_after_s == pytest.approx(1.2 + SHUTDOWN_S + RELAUNCH_S, abs=1)
    assert tr.wait_idle(1) and tr.accepted == 0
    with pytest.raises(BusyError), gate.slot():  # new work: refused
        pass


def test_the_plan_counts_each_request_by_its_size():
    """A long text behind short ones is refused at once when its measured rate says it
    cannot end by the deadline; a short one after it is still kept. (Counting every request
    as long as the last one — 0.1 s here — kept the long one, which then ran past the
    deadline and was refused late.)"""
    tr = _tracker()
    gate = SynthesisGate(1, 5, tr)
    for c in _start(gate, 2, work_s=0.1, size=100):  # measured: 0.1 s per 100 characters
        c.join(5)
    running = Client(gate, 0.1, 100)
    long_text, short = Client(gate, 3.0, 3000), Client(gate, 0.1, 100)
    for c in (running, long_text, short):
        c.start()
        time.sleep(0.02)
    assert running.started.wait(2)
    t0 = time.monotonic()
    tr.begin_drain(2.0)  # the long one: 3000 characters ≈ 3 s (× SAFETY) > 2 s
    for c in (running, long_text, short):
        c.join(5)
    assert running.outcome == "ok" and short.outcome == "ok"
    assert isinstance(long_text.outcome, BusyError), long_text.outcome
    assert long_text.answered_at - t0 < 0.1, "refused at once, not at the deadline"


def test_the_plan_keeps_a_margin_for_slower_runs():
    """A waiting request that fits the deadline only if it runs exactly as fast as the last
    one is refused at once: the plan counts SAFETY × the measured time."""
    tr = _tracker(0.5)
    gate = SynthesisGate(1, 5, tr)
    clients = _start(gate, 2, work_s=0.5)
    assert clients[0].started.wait(2)
    t0 = time.monotonic()
    tr.begin_drain(1.1)  # 0.5 + 0.5 fits; 0.5 × SAFETY twice does not
    for c in clients:
        c.join(5)
    assert SAFETY * 1.0 > 1.1
    assert clients[0].outcome == "ok"
    assert isinstance(clients[1].outcome, BusyError)
    assert clients[1].answered_at - t0 < 0.1


def test_retry_after_counts_the_relaunch_learnt_from_the_restart_log(tmp_path):
    from cosyvoice.lifecycle.drain import DEFAULT_LAUNCH_S
    from cosyvoice.lifecycle.restarts import RestartLog

    log = RestartLog(tmp_path / "restarts.log")
    tr = _tracker(0.05)
    tr.relaunch_s = log.relaunch_estimate_s
    tr.startup_s = 4.0
    assert tr.relaunch_estimate_s() == DEFAULT_LAUNCH_S + 4.0  # nothing recorded yet
    for seconds in (90.0, 10.0, 12.0, 40.0, 11.0, 13.0):  # the first is too old to count
        log.record("manual", 123, 1.5, seconds)
    tr.begin_drain(5.0)  # nothing accepted: shutdown + the median of the last five (12 s)
    assert tr.draining_error().retry_after_s == math.ceil(SHUTDOWN_S + 12.0)


def test_admitted_work_is_not_refused_by_track_when_the_drain_starts():
    tr = _tracker(0.05)
    gate = SynthesisGate(1, 1, tr)
    inside = threading.Event()
    release = threading.Event()
    result = []

    def admitted_then_track():
        with gate.slot():
            inside.set()
            release.wait(5)
            with tr.track("preset"):  # the pipeline's own check, after the drain began
                result.append("ran")

    th = threading.Thread(target=admitted_then_track)
    th.start()
    assert inside.wait(2)
    tr.begin_drain(30)
    release.set()
    th.join(5)
    assert result == ["ran"]
    with pytest.raises(BusyError), tr.track("preset"):  # a request the gate never saw
        pass


def test_the_deadline_refuses_whatever_still_waits():
    tr = _tracker(0.01)  # the estimate is far too short: everything looks like it fits
    gate = SynthesisGate(1, 3, tr)
    clients = _start(gate, 3)
    tr.begin_drain(5.0)
    time.sleep(0.05)
    assert all(c.outcome is None for c in clients)  # all kept for now
    t0 = time.monotonic()
    tr.end_drain_deadline()
    for c in clients:
        c.join(5)
    assert clients[0].outcome == "ok"
    refused = [c for c in clients[1:] if isinstance(c.outcome, BusyError)]
    assert refused and all(c.answered_at - t0 < 0.1 for c in refused)
