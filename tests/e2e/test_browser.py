"""The UI in a real headless Chromium: speak, clone, switch language, restart the app.

The page is driven the way a user drives it (typing, clicking, choosing a file); the
server is the real app with real models. Screenshots of failures go to tests/artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.process_tools import alive, live_pid, wait_ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SYNTH_TIMEOUT_MS = 120_000


def _generate(page, text: str) -> str:
    """Type ``text``, press Generate, wait for the result player; returns its source."""
    page.locator("#text textarea").fill(text)
    page.locator("#generate").click()
    audio = page.locator("#output audio[src]").first
    audio.wait_for(state="attached", timeout=SYNTH_TIMEOUT_MS)
    expect(page.locator("#status")).to_contain_text("Done:", timeout=SYNTH_TIMEOUT_MS)
    return audio.get_attribute("src") or ""


def test_type_text_generate_shows_audio(page, e2e_app):
    src = _generate(page, "Hello from a real browser.")
    assert src, "the result <audio> element has an empty src"
    status = page.locator("#status").inner_text()
    assert "1 sentence(s)" in status and ".wav" in status
    saved = status.split("Saved as ")[1].split()[0].rstrip(".")
    assert (e2e_app.outputs / saved).is_file()


def test_upload_prompt_and_clone(page, real_female_prompt):
    page.get_by_label("3-second cloning").check()
    expect(page.locator("#voice")).to_be_hidden()
    page.locator("#prompt input[type=file]").set_input_files(str(real_female_prompt))
    page.locator("#prompt audio[src]").first.wait_for(state="attached")
    src = _generate(page, "My voice, copied from a short recording.")
    assert src
    status = page.locator("#status").inner_text()
    assert "_clone_" in status and "resampled 32000 Hz" in status


def test_bad_input_shows_a_message_not_audio(page):
    page.locator("#text textarea").fill("🙂🙂🙂 !!!")
    page.locator("#generate").click()
    expect(page.get_by_text("no speakable words").first).to_be_visible(timeout=30_000)
    assert page.locator("#output audio[src]").count() == 0


def test_mode_switch_shows_each_modes_inputs(page):
    page.get_by_label("Instruction control").check()
    expect(page.locator("#instruction")).to_be_visible()
    expect(page.locator("#dialects")).to_contain_text("Chinese dialects")
    expect(page.locator("#voice")).to_be_visible()
    expect(page.locator("#step")).to_contain_text("instruction")
    page.get_by_label("Cross-lingual cloning").check()
    expect(page.locator("#instruction")).to_be_hidden()
    expect(page.locator("#voice")).to_be_hidden()
    expect(page.locator("#save-voice")).to_be_visible()
    page.get_by_label("Stream (play while synthesizing)").check()
    expect(page.locator("#generate-stream")).to_be_visible()
    expect(page.locator("#generate")).to_be_hidden()


def test_switch_ui_language(page):
    generate = page.locator("#generate")
    expect(generate).to_have_text("Generate")
    page.get_by_label("中文").check()
    expect(generate).to_have_text("生成音频")
    expect(page.locator("button[role=tab]", has_text="模型管理")).to_be_visible()
    expect(page.locator("#text")).to_contain_text("输入合成文本")
    page.get_by_label("English").check()
    expect(generate).to_have_text("Generate")
    expect(page.locator("button[role=tab]", has_text="Models")).to_be_visible()


def test_restart_button_brings_back_a_new_working_process(page, e2e_app):
    old_pid = live_pid(e2e_app.url)
    assert old_pid
    page.locator("button[role=tab]", has_text="Models").click()
    page.locator("#restart-app").click()
    confirm = page.locator("#restart-yes").first
    expect(confirm).to_be_visible()
    expect(page.locator("#restart-confirm").first).to_contain_text("Restart the application?")
    confirm.click()
    expect(page.locator("#admin-status").first).to_contain_text(
        f"old process {old_pid}", timeout=15_000)
    overlay = page.locator("#cosyvoice-restart-overlay")
    expect(overlay).to_contain_text("Restarting", timeout=15_000)
    # The page reloads itself once the new process serves: our poll reloads on a ready new
    # pid, and Gradio's client may reload it a little earlier, as soon as the new server
    # answers HTTP (models still loading); so readiness is awaited here, boundedly.
    page.wait_for_event("framenavigated", timeout=180_000)
    page.wait_for_selector("#generate", timeout=60_000)
    expect(overlay).to_have_count(0)
    new_pid, _ = wait_ready(e2e_app.url, timeout=60, not_pid=old_pid)
    assert new_pid == live_pid(e2e_app.url) and not alive(old_pid)
    assert _generate(page, "Back after a restart.")
