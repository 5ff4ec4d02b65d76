"""Fitting a voice from the Synthesis tab in a real browser (a tiny search: 2 candidates, a
5 s budget): upload a prompt, choose *Fitted*, save; the progress line runs, the before/after
samples appear, the voice joins the voice list as a fitted voice and speaks."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import start_app, stop_app
from tests.e2e.conftest import open_page

pytestmark = pytest.mark.slow
NAME = "browser-fit"


@pytest.fixture(scope="module")
def fit_e2e_app(tmp_path_factory):
    app = start_app(tmp_path_factory.mktemp("fit-e2e"), "--fit-popsize", "2",
                    "--fit-budget-s", "5")
    yield app
    stop_app(app)


def test_fit_a_voice_from_the_synthesis_tab(browser, fit_e2e_app, request,
                                            real_female_prompt):
    with open_page(browser, fit_e2e_app.url, request) as page:
        expect(page.locator("#save-kind")).to_be_hidden()  # preset mode: a blend saves
        page.get_by_label("3-second cloning").check()
        kind = page.locator("#save-kind")
        expect(kind).to_be_visible()
        expect(kind).to_contain_text("Instant (~1 s)")
        page.locator("#prompt input[type=file]").set_input_files(str(real_female_prompt))
        page.locator("#prompt audio[src]").first.wait_for(state="attached")
        page.locator("#save-name input, #save-name textarea").first.fill(NAME)
        kind.get_by_label("Fitted (~1 min)").check()
        page.locator("#save-voice").click()
        expect(page.locator("#save-status")).to_contain_text("in the background",
                                                            timeout=120_000)
        text = page.locator("#fit-progress-text")
        expect(text).to_contain_text(NAME, timeout=30_000)
        expect(page.locator("#fit-cancel")).to_be_visible()
        expect(text).to_have_attribute("data-state", "done", timeout=600_000)
        expect(text).to_contain_text("GE2E")
        expect(page.locator("#fit-samples")).to_be_visible()
        expect(page.locator("#fit-before audio[src]")).to_be_attached(timeout=30_000)
        expect(page.locator("#fit-after audio[src]")).to_be_attached()
        expect(page.locator("#fit-cancel")).to_be_hidden()

        page.get_by_label("Preset voice", exact=True).check()
        box = page.locator("#voice input")
        box.click()
        option = page.get_by_role("option", name=f"{NAME} · fitted voice")
        expect(option).to_be_visible(timeout=30_000)
        option.click()
        expect(box).to_have_value(re.compile(NAME))
        page.locator("#text textarea").fill("Spoken by the voice fitted in this browser.")
        page.locator("#generate").click()
        expect(page.locator("#status")).to_contain_text("Done", timeout=180_000)
        # the player gets its file just after the status line says Done
        expect(page.locator("#output audio[src]").first).to_be_attached(timeout=30_000)
