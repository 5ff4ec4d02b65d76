"""Prompt transcription in a real headless Chromium: uploading a prompt in clone mode fills
the empty transcript box (with a note saying so and how long it took); the button
transcribes again on demand; a typed transcript is never overwritten by an upload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from bench._metrics import wer
from tests.asr.known_prompts import EN_TEXT, speak

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ASR_TIMEOUT_MS = 180_000


@pytest.fixture(scope="module")
def en_prompt(tmp_path_factory):
    return speak(tmp_path_factory.mktemp("e2e-asr"), "joe", EN_TEXT, "joe")


def _upload(page, path) -> None:
    page.locator("#prompt input[type=file]").set_input_files(str(path))
    page.locator("#prompt audio[src]").first.wait_for(state="attached")


def test_uploading_a_prompt_fills_the_transcript_box(page, en_prompt):
    page.get_by_label("3-second cloning").check()
    box = page.locator("#prompt-text textarea")
    expect(box).to_have_value("")
    expect(page.locator("#transcribe")).to_be_visible()
    _upload(page, en_prompt)
    note = page.locator("#transcribe-note")
    expect(note).to_contain_text("Transcribed by whisper-", timeout=ASR_TIMEOUT_MS)
    expect(note).to_contain_text("language: en")
    assert wer(EN_TEXT, box.input_value()) <= 15.0, box.input_value()

    box.fill("")  # the button transcribes again on demand
    page.locator("#transcribe").click()
    expect(box).not_to_have_value("", timeout=ASR_TIMEOUT_MS)
    assert wer(EN_TEXT, box.input_value()) <= 15.0


def test_a_typed_transcript_is_kept_and_preset_mode_has_no_button(page, en_prompt):
    expect(page.locator("#transcribe")).to_be_hidden()  # preset mode: no transcript box
    page.get_by_label("3-second cloning").check()
    box = page.locator("#prompt-text textarea")
    box.fill("my own words")
    _upload(page, en_prompt)
    page.wait_for_timeout(3000)
    expect(box).to_have_value("my own words")
    expect(page.locator("#transcribe-note")).not_to_contain_text("Transcribed")
