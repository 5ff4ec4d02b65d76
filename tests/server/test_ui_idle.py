"""The app's UI queue does not spin while nobody asks anything: gradio 6 polls its queue
every 1 ms and its progress every 10 ms on Linux, which cost an idle app 5 % of a core
(``bench/app_rss.py --idle-s 30``: 5.1 % → 1.4 %, bench/README.md)."""

from __future__ import annotations

from tests.conftest import local_services


def test_the_apps_queue_polls_calmly_when_idle(tmp_path):
    from cosyvoice.server.ui import PROGRESS_POLL_S, QUEUE_POLL_S, build_ui

    demo = build_ui(local_services(tmp_path).synth)
    queue = demo._queue
    assert queue.sleep_when_free == QUEUE_POLL_S >= 0.02
    assert queue.progress_update_sleep_when_free == PROGRESS_POLL_S >= 0.1
