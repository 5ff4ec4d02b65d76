"""A light load run (bench/load.py's clients) against the real app with one synthesis
slot and no queue: 4 clients × 3 short requests of mixed modes. Busy answers must be
429/503 with Retry-After, the clients retry after it, and every request ends in audio."""

from __future__ import annotations

import pytest

from bench.load import percentile, run_load

pytestmark = pytest.mark.slow


def test_light_load_no_5xx_and_retry_after_on_every_busy_answer(guarded_app,
                                                                  real_female_prompt):
    report = run_load(guarded_app.url, guarded_app.proc.pid, clients=4, requests=3,
                      prompt=real_female_prompt.read_bytes(), give_up_s=120)
    statuses = report.statuses()
    assert report.server_errors() == 0, statuses
    assert report.busy_without_retry_after() == 0, statuses
    assert not report.failed, report.failed
    assert len(report.done) == 12
    assert statuses[429] + statuses[503] > 0, f"one slot, no queue, 4 clients: {statuses}"
    assert set(statuses) <= {200, 429, 503}, statuses
    assert {m for m, _, _ in report.done} == {"en", "zh", "clone"}
    assert report.rss and percentile([d[1] for d in report.done], 95) < 120
    assert guarded_app.ready()


def test_percentile_is_nearest_rank():
    xs = [float(x) for x in range(1, 21)]
    assert percentile(xs, 50) == 10 and percentile(xs, 95) == 19 and percentile(xs, 100) == 20
    assert percentile([3.0], 95) == 3.0
