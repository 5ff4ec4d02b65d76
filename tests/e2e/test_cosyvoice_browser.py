"""The CosyVoice engine in a real headless Chromium: pick the engine, then clone (prompt upload
and transcript), cross-lingual and instruct, on a tiny CosyVoice3 folder of our own making
(tests/cosyvoice_folder.py). The controls follow the engine's capabilities (the transcript is
required in its clone mode, a missing one is named in the status line); each mode's result
is a 24 kHz recording that is not silent."""

from __future__ import annotations

import re

import numpy as np
import pytest
import soundfile as sf
from playwright.sync_api import expect

from tests.conftest import start_cosyvoice_app, stop_app
from tests.e2e.conftest import open_page

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SYNTH_TIMEOUT_MS = 120_000
COSYVOICE = "Fun-CosyVoice3 (released folder, our runtime)"
OFFLINE = "Offline (Piper · FastSpeech2 · HiFi-GAN · Kokoro)"


@pytest.fixture(scope="module")
def cv_e2e_app(tmp_path_factory, cv_folder_v3):
    app = start_cosyvoice_app(tmp_path_factory.mktemp("cv-e2e"), cv_folder_v3)
    yield app
    stop_app(app)


@pytest.fixture
def cv_page(browser, cv_e2e_app, request):
    with open_page(browser, cv_e2e_app.url, request) as page:
        _switch(page, OFFLINE)
        _switch(page, COSYVOICE)  # a real switch, from the other engine
        yield page


def _switch(page, label: str) -> None:
    """Pick an engine and wait until the page shows it: its default voice (the folder's
    spk2info speakers for CosyVoice) in preset mode, so that a later click is not undone
    by the switch's own updates."""
    page.locator("#engine").get_by_label(label, exact=True).check()
    voice = expect(page.locator("#voice input"))
    spk2info = re.compile("spk2info")
    voice.to_have_value(spk2info) if label == COSYVOICE else voice.not_to_have_value(spk2info)
    expect(page.locator("#mode").get_by_label("Preset voice", exact=True)).to_be_checked()
    expect(page.locator("#voice")).to_be_visible()


def _generate(page, app, text: str) -> tuple[np.ndarray, int]:
    """Type ``text``, press Generate, wait for "Done:"; returns the saved result's audio."""
    page.locator("#text textarea").fill(text)
    page.locator("#generate").click()
    page.locator("#output audio[src]").first.wait_for(state="attached",
                                                        timeout=SYNTH_TIMEOUT_MS)
    expect(page.locator("#status")).to_contain_text("Done:", timeout=SYNTH_TIMEOUT_MS)
    saved = page.locator("#status").inner_text().split("Saved as ")[1].split()[0].rstrip(".")
    return sf.read(app.outputs / saved, dtype="float32")


def _speech(result: tuple[np.ndarray, int]) -> None:
    wav, sr = result
    assert sr == 24000 and len(wav) > 0.04 * sr and float(np.abs(wav).max()) > 0.01


def _upload(page, prompt) -> None:
    page.locator("#prompt input[type=file]").set_input_files(str(prompt))
    page.locator("#prompt audio[src]").first.wait_for(state="attached")


def test_the_controls_follow_the_engines_capabilities(cv_page):
    page = cv_page
    _switch(page, OFFLINE)
    page.get_by_label("3-second cloning").check()
    expect(page.locator("#prompt-text")).to_contain_text("optional")
    _switch(page, COSYVOICE)
    page.get_by_label("3-second cloning").check()
    expect(page.locator("#voice")).to_be_hidden()
    expect(page.locator("#prompt")).to_be_visible()
    expect(page.locator("#prompt-text")).to_contain_text("required")
    page.get_by_label("Cross-lingual cloning").check()
    expect(page.locator("#prompt-text")).to_be_hidden()
    expect(page.locator("#instruction")).to_be_hidden()
    page.get_by_label("Instruction control").check()
    expect(page.locator("#instruction")).to_be_visible()
    expect(page.locator("#voice")).to_be_visible()
    expect(page.locator("#stream")).to_be_visible()


def test_clone_asks_for_the_transcript_then_speaks(cv_page, cv_e2e_app, real_female_prompt):
    page = cv_page
    page.get_by_label("3-second cloning").check()
    _upload(page, real_female_prompt)
    page.locator("#text textarea").fill("My voice, copied from a short recording.")
    page.locator("#generate").click()
    expect(page.locator("#status")).to_contain_text("needs the prompt's transcript",
                                                    timeout=SYNTH_TIMEOUT_MS)
    assert page.locator("#output audio[src]").count() == 0
    page.locator("#prompt-text textarea").fill("a line read for the prompt")
    _speech(_generate(page, cv_e2e_app, "My voice, copied from a short recording."))
    assert "_clone_" in page.locator("#status").inner_text()


def test_cross_lingual_speaks(cv_page, cv_e2e_app, real_female_prompt):
    page = cv_page
    page.get_by_label("Cross-lingual cloning").check()
    _upload(page, real_female_prompt)
    _speech(_generate(page, cv_e2e_app, "你好，这是跨语种复刻。"))


def test_instruct_speaks(cv_page, cv_e2e_app):
    page = cv_page
    page.get_by_label("Instruction control").check()
    page.locator("#instruction textarea").fill("speak happily")
    _speech(_generate(page, cv_e2e_app, "Hello, with a happy voice."))
