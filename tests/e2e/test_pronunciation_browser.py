"""Issue #27 in a real headless Chromium: a lexicon edit changes the reading (the G2P's
pinyin shown in the Lexicon tab, the file the app keeps, and the audio baker speaks), and
a result's subtitles download as an SRT with the sentences at increasing times."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SYNTH_MS = 120_000
POLYPHONE = "朝阳公园很大。"


def _generate(page, app, previous: str | None = None) -> bytes:
    page.locator("#generate").click()
    status = page.locator("#status")
    if previous is not None:
        expect(status).not_to_contain_text(previous, timeout=SYNTH_MS)
    expect(status).to_contain_text("Done:", timeout=SYNTH_MS)
    name = re.search(r"Saved as (\S+\.wav)", status.inner_text()).group(1)
    return name, (app.outputs / name).read_bytes()


def _choose_voice(page, voice: str) -> None:
    box = page.locator("#voice input")
    box.fill(voice)
    box.press("Enter")
    expect(box).to_have_value(re.compile(voice, re.IGNORECASE))


def test_a_lexicon_edit_changes_the_reading(page, e2e_app):
    _choose_voice(page, "baker")
    page.locator("#text textarea").fill(POLYPHONE)
    page.locator("#seed input").fill("7")
    first, before = _generate(page, e2e_app)

    page.get_by_role("tab", name="Lexicon").click()
    page.locator("#lexicon-sample textarea").fill(POLYPHONE)
    page.locator("#lexicon-check").click()
    preview = page.locator("#lexicon-preview")
    expect(preview).to_contain_text("zhao1 yang2")

    page.locator("#lexicon-text textarea").fill("朝阳 chao2 yang")  # no tone: refused
    page.locator("#lexicon-save").click()
    expect(page.locator("#lexicon-status")).to_contain_text("not saved")
    expect(page.locator("#lexicon-status")).to_contain_text("{朝阳|chao2 yang}")
    assert not (e2e_app.workdir / "lexicon.json").exists()

    page.locator("#lexicon-text textarea").fill("朝阳 chao2 yang2")
    page.locator("#lexicon-save").click()
    expect(page.locator("#lexicon-status")).to_contain_text("saved 1 words")
    saved = json.loads((e2e_app.workdir / "lexicon.json").read_text("utf-8"))
    assert saved["zh"] == {"朝阳": "chao2 yang2"}
    page.locator("#lexicon-check").click()
    expect(preview).to_contain_text("chao2 yang2 gong1 yuan2")
    expect(preview).to_contain_text("(lexicon)")

    page.get_by_role("tab", name=re.compile("Synthesis")).click()
    _, after = _generate(page, e2e_app, previous=first)
    assert hashlib.sha256(after).digest() != hashlib.sha256(before).digest()
    # and back: the same text, seed and voice without the entry speak the first audio again
    page.get_by_role("tab", name="Lexicon").click()
    page.locator("#lexicon-text textarea").fill("")
    page.locator("#lexicon-save").click()
    expect(page.locator("#lexicon-status")).to_contain_text("saved 0 words")


def test_subtitles_download_as_srt(page, e2e_app):
    sentences = ["The first sentence is here.", "A second one follows it.",
                 "And the third ends the text."]
    page.locator("#text textarea").fill(" ".join(sentences))
    name, _ = _generate(page, e2e_app)
    table = page.locator("#cue-table")
    expect(table).to_contain_text(sentences[1], timeout=30_000)
    link = page.locator("#subtitle-files tr", has_text=".srt").locator("a").first
    expect(link).to_be_visible()
    with page.expect_download() as info:
        link.click()
    srt = open(info.value.path(), encoding="utf-8").read()
    assert info.value.suggested_filename == name.replace(".wav", ".srt")
    stamps = re.findall(r"(\d\d):(\d\d):(\d\d),(\d\d\d) --> (\d\d):(\d\d):(\d\d),(\d\d\d)", srt)
    seconds = [(int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000)
               for stamp in stamps for h, m, s, ms in (stamp[:4], stamp[4:])]
    assert len(stamps) == 3 and seconds == sorted(seconds) and seconds[-1] > seconds[0]
    for text in sentences:
        assert text in srt
