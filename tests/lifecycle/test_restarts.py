"""The restart record (run/restarts.log): lines as restart.sh writes them, old and new, and
the relaunch time a drain's Retry-After learns from them."""

from __future__ import annotations

from cosyvoice.lifecycle.restarts import LEARN_FROM, RestartEntry, RestartLog


def test_lines_old_and_new_parse(tmp_path):
    log = RestartLog(tmp_path / "restarts.log")
    log.path.write_text(
        "1765000000 cron 123\n"                 # before durations were recorded
        "1765000100 button 124 3.2 14.5\n"      # as restart.sh writes it now
        "1765000200 manual - - 9.0\n"           # nothing was running
        "1765000300 watchdog 125 40.1 -\n"      # the new process never became ready
        "garbage\n1765000400 api 126 nan -3\n")  # damaged durations are ignored
    assert log.entries() == [
        RestartEntry(1765000000, "cron", 123),
        RestartEntry(1765000100, "button", 124, 3.2, 14.5),
        RestartEntry(1765000200, "manual", None, None, 9.0),
        RestartEntry(1765000300, "watchdog", 125, 40.1, None),
        RestartEntry(1765000400, "api", 126, None, None)]
    assert log.count_by_reason() == {"cron": 1, "button": 1, "manual": 1, "watchdog": 1,
                                     "api": 1}


def test_the_relaunch_estimate_is_the_median_of_the_last_restarts_that_came_up(tmp_path):
    log = RestartLog(tmp_path / "restarts.log")
    assert log.relaunch_estimate_s() is None  # no record: the caller's default applies
    log.record("manual", None, None, 200.0)  # long ago, and beyond the last LEARN_FROM
    for seconds in (20.0, 22.0, None, 60.0, 21.0, 23.0):  # None: a failed start
        log.record("button", 42, 2.0, seconds)
    assert LEARN_FROM == 5
    assert log.relaunch_estimate_s() == 22.0  # median of 20, 22, 60, 21, 23
    line = log.path.read_text().splitlines()[-1].split()
    assert line[1:] == ["button", "42", "2.0", "23.0"]
