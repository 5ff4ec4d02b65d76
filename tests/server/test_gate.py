"""SynthesisGate: bounded admission, first come first served, and the drain's promise —
accepted work finishes within the deadline or is refused at once with an honest
Retry-After (real threads, a real RequestTracker; each "synthesis" sleeps)."""

from __future__ import annotations

import re
import threading
import time

import pytest

from cosyvoice.errors import BusyError, QueueFullError
from cosyvoice.lifecycle.drain import RequestTracker
from cosyvoice.server.gate import SynthesisGate

WORK_S = 0.4


def _tracker(history_s: float = WORK_S) -> RequestTracker:
    tr = RequestTracker()
    tr.trim_after_requests = False
    tr.startup_s = 5.0
    with tr.track("preset"):  # one finished synthesis: the estimate
        time.sleep(history_s)
    return tr


class Client(threading.Thread):
    """One request through the gate: records its outcome and when it came."""

    def __init__(self, gate: SynthesisGate, work_s: float = WORK_S) -> None:
        super().__init__(daemon=True)
        self.gate, self.work_s = gate, work_s
        self.outcome: str | BusyError | None = None
        self.started = threading.Event()
        self.answered_at = 0.0

    def run(self) -> None:
        try:
            with self.gate.slot(), self.gate.tracker.track("preset"):
                self.started.set()
                time.sleep(self.work_s)
            self.outcome = "ok"
        except BusyError as e:
            self.outcome = e
        self.answered_at = time.monotonic()


def _start(gate: SynthesisGate, n: int) -> list[Client]:
    clients = []
    for _ in range(n):
        c = Client(gate)
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
    # Running ends by ~0.4 s, the next by ~0.8 s; the third (1.2 s) cannot make 1.0 s.
    tr.begin_drain(1.0)
    for c in clients:
        c.join(5)
    assert [c.outcome for c in clients[:2]] == ["ok", "ok"]
    for c in clients[2:]:
        assert isinstance(c.outcome, BusyError)
        assert c.answered_at - t0 < 0.1, "refused work must be answered at once"
        # Retry-After: the kept work's end (~0.8 s) + startup 5 s + restart margin 3 s.
        assert c.outcome.retry_after_s == _message_number(c.outcome) == 9
    assert tr.wait_idle(1) and tr.accepted == 0
    with pytest.raises(BusyError), gate.slot():  # new work: refused
        pass


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
