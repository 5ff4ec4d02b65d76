"""The Dialogue and Batch tabs in a real headless Chromium: a 3-voice dialogue (3 table
rows, a playing result), and a batch job whose progress bar survives a restart of the app
(the job resumes and finishes; its result zip is offered)."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.process_tools import live_pid, wait_ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TIMEOUT_MS = 180_000


def open_tab(page, label: str) -> None:
    page.locator("button[role=tab]", has_text=label).click()


def test_dialogue_of_three_voices(page):
    open_tab(page, "Dialogue")
    page.locator("#dialogue-script textarea").fill(
        "[joe] Welcome to the show.\n[af_heart|happy] Thanks for having me!\n"
        "[zf_xiaoxiao] 大家好。")
    page.locator("#dialogue-generate").click()
    audio = page.locator("#dialogue-audio audio[src]").first
    audio.wait_for(state="attached", timeout=TIMEOUT_MS)
    expect(page.locator("#dialogue-status")).to_contain_text("3 lines", timeout=TIMEOUT_MS)
    table = page.locator("#dialogue-table")
    for voice in ("joe", "af_heart", "zf_xiaoxiao"):
        expect(table).to_contain_text(voice)
    # Gradio's grid counts its header row: 4 = the header and 3 lines.
    expect(table.locator("[role=grid]")).to_have_attribute("aria-rowcount", "4")
    expect(page.locator("#dialogue-subtitles")).to_contain_text(".srt")
    played = audio.evaluate("""async (a) => {
        a.muted = true; await a.play();
        await new Promise(r => setTimeout(r, 700));
        const t = a.currentTime; a.pause(); return [t, a.duration]; }""")
    assert played[0] > 0.1 and played[1] > 2.0, played


def test_batch_job_progress_survives_a_restart(page, e2e_app, tmp_path):
    rows = "\n".join(f'"Batch line {i}, read by the background job.",joe' for i in range(16))
    job_file = tmp_path / "lines.csv"
    job_file.write_text(f"text,voice\n{rows}\n", encoding="utf-8")
    open_tab(page, "Batch")
    page.locator("#job-file input[type=file]").set_input_files(str(job_file))
    page.locator("#job-submit").click()
    job_id_box = page.locator("#job-id textarea, #job-id input").first
    expect(job_id_box).to_have_value(re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$"),
                                      timeout=60_000)
    job_id = job_id_box.input_value()
    progress = page.locator("#job-progress-text")
    expect(progress).to_contain_text(re.compile(r"running — [1-9]\d*/16 items"),
                                     timeout=TIMEOUT_MS)
    bar = page.locator("#job-progress-bar")
    assert float(bar.get_attribute("value")) > 0

    old_pid = live_pid(e2e_app.url)
    req = urllib.request.Request(e2e_app.url + "/admin/restart", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 202
    wait_ready(e2e_app.url, timeout=240, not_pid=old_pid)

    page.goto(e2e_app.url + "/")
    page.wait_for_selector("#generate")
    open_tab(page, "Batch")
    page.locator("#job-id textarea, #job-id input").first.fill(job_id)
    progress = page.locator("#job-progress-text")
    expect(progress).to_contain_text("done — 16/16 items", timeout=TIMEOUT_MS)
    expect(progress).to_contain_text("resumed 1×")
    expect(page.locator("#job-result")).to_contain_text(".zip", timeout=30_000)
    with urllib.request.urlopen(f"{e2e_app.url}/api/v1/jobs/{job_id}", timeout=10) as r:
        job = json.load(r)
    assert job["runs"] == 2 and job["done"] == 16
    assert sum(it["attempts"] for it in job["items"]) <= 17  # at most one item redone
