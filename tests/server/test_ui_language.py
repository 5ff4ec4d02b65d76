"""The page's texts: every entry of the UI string tables in both languages, the Chinese
interface with no English left (on the running app, through the language radio's own
events), the introduction built from the engines' capabilities, the similarity slider only
where it does something, and the Models tab read on page load."""

from __future__ import annotations

import re
import string
import uuid

import httpx
import pytest

from cosyvoice.engine.cosyvoice import capabilities as cosyvoice_capabilities
from cosyvoice.server import texts, ui_transcribe
from cosyvoice.server.texts import intro
from cosyvoice.server.ui import _visibility
from cosyvoice.settings import Settings
from tests.conftest import RunningApp, get_json

CJK = re.compile(r"[\u3400-\u9fff]")
WORD = re.compile(r"[A-Za-z]{3,}")
TABLES = {"texts": texts.TEXTS, "transcribe": ui_transcribe.TEXTS}
# Components the user never sees (no text to translate).
NEVER_SHOWN = {"history-get", "restart-old-pid"}


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}


@pytest.mark.parametrize("table", TABLES)
def test_every_string_has_both_languages(table):
    """Each entry: an English and a Chinese text, the Chinese one in Chinese (not the
    English copied), and the same ``{fields}`` in both (a missing one would raise when
    formatted, in one language only)."""
    bad = []
    for key, (en, zh) in TABLES[table].items():
        if not en.strip() or not zh.strip():
            bad.append(f"{key}: empty")
        elif not CJK.search(zh) or zh == en:
            bad.append(f"{key}: the Chinese text is not Chinese: {zh!r}")
        elif _fields(en) != _fields(zh):
            bad.append(f"{key}: fields {_fields(en)} vs {_fields(zh)}")
    assert not bad, "\n".join(bad)


def _offline(**settings):
    from cosyvoice.engine.offline import configured

    return configured(Settings(**settings))


def test_the_introduction_follows_the_capabilities():
    """Built from data: each engine's label, its languages by name and how it clones; no
    engine that is not there (the old text named Baker + Piper and the adapter)."""
    blend, adapter = _offline(), _offline(clone_space=False)
    page = intro([blend, cosyvoice_capabilities(3)], "en")
    assert blend.label in page and cosyvoice_capabilities(3).label in page
    assert "Brazilian Portuguese" in page and "Cantonese" in page
    assert "nearest to your prompt" in page and "zero-shot" in page
    assert "formants" not in page  # the blend engine does not move formants
    assert "formants" in intro([adapter], "en")
    zh = intro([blend, cosyvoice_capabilities(3)], "zh")
    leftover = WORD.findall(CJK.sub(" ", zh.replace(blend.label, "").replace(
        cosyvoice_capabilities(3).label, "")))
    assert set(leftover) <= {"bella", "sky"}, leftover  # the blend example af_bella:2+af_sky:1


def test_the_similarity_slider_shows_only_where_it_changes_a_clone():
    """Kokoro blend cloning ignores the strength (clone_adapter_scale 0): no slider; the
    adapter path and a blend moved by the adapter use it; CosyVoice ignores it."""
    assert not _visibility(_offline(), "clone")["strength"]
    assert _visibility(_offline(clone_adapter_scale=0.5), "clone")["strength"]
    assert _visibility(_offline(clone_space=False), "clone")["strength"]
    assert not _visibility(cosyvoice_capabilities(3), "clone")["strength"]
    assert not _visibility(_offline(clone_space=False), "preset")["strength"]


# --- the running app -------------------------------------------------------------------------

def _config(app: RunningApp) -> dict:
    status, body = get_json(app.url + "/config", timeout=30)
    assert status == 200
    return body


def _run(app: RunningApp, dep: dict, data: list) -> list:
    r = httpx.post(app.url + "/gradio_api/run/predict", timeout=60, json={
        "data": data, "fn_index": dep["id"], "session_hash": uuid.uuid4().hex[:12]})
    assert r.status_code == 200, r.text[:300]
    return r.json()["data"]


def _shown_texts(comp: dict) -> dict[str, object]:
    """The texts a component shows: label, placeholder, info; a Markdown's, a Button's
    value; a table's headers. Only those with English words in them."""
    props = comp["props"]
    keys = ["label", "placeholder", "info"]
    if comp["type"] in ("markdown", "button"):
        keys.append("value")
    out = {k: props[k] for k in keys if isinstance(props.get(k), str) and WORD.search(props[k])}
    if comp["type"] == "dataframe" and any(WORD.search(h) for h in props.get("headers") or []):
        out["headers"] = props["headers"]
    return out


def test_the_chinese_interface_has_no_english_left(running_app):
    """Switch the language radio to 中文 as the page does (every change event it has) and
    check that each text a component shows in English comes back in Chinese."""
    config = _config(running_app)
    comps = {c["id"]: c for c in config["components"]}
    radio = next(c for c in comps.values() if c["props"].get("elem_id") == "ui-lang")
    got: dict[int, dict] = {}
    for dep in config["dependencies"]:
        if not any(t[0] == radio["id"] and t[1] == "change" for t in dep["targets"]):
            continue
        data = ["zh" if i == radio["id"] else comps[i]["props"].get("value")
                for i in dep["inputs"]]
        for out_id, value in zip(dep["outputs"], _run(running_app, dep, data), strict=True):
            if isinstance(value, dict):
                got.setdefault(out_id, {}).update(value)
    missing = []
    for cid, comp in comps.items():
        if comp["props"].get("elem_id") in NEVER_SHOWN:
            continue
        for prop, english in _shown_texts(comp).items():
            chinese = got.get(cid, {}).get(prop)
            if not chinese or chinese == english or not CJK.search(str(chinese)):
                name = comp["props"].get("elem_id") or comp["type"]
                missing.append(f"{name}.{prop}: {english!r} → {chinese!r}")
    assert not missing, "still English in the Chinese interface:\n" + "\n".join(missing)


def test_the_models_tab_is_read_on_page_load(running_app):
    """The table and the system line come from a page-load event (not the values of the
    process start): the event answers the states /admin/models reports now."""
    config = _config(running_app)
    comps = {c["id"]: c for c in config["components"]}
    by_elem = {c["props"].get("elem_id"): i for i, c in comps.items()}
    loads = [d for d in config["dependencies"] if any(t[1] == "load" for t in d["targets"])]
    table_load = next(d for d in loads if by_elem["models-table"] in d["outputs"])
    system_load = next(d for d in loads if by_elem["system-readings"] in d["outputs"])
    _, now = get_json(running_app.url + "/admin/models")
    rows = _run(running_app, table_load, [])[0]
    rows = rows["value"]["data"] if isinstance(rows, dict) and "value" in rows else rows
    rows = rows["data"] if isinstance(rows, dict) else rows
    states = {r[0]: r[1] for r in rows}
    assert states == {m["name"]: m["state"] for m in now["models"]}, (states, now)
    assert "up 0m00s" not in str(_run(running_app, system_load, []))
