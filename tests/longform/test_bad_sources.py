"""The bad-input catalogue of the long-form parsers: every malformed batch source (JSONL,
CSV, text) and dialogue script is a TextError naming the line or row — never a
RecursionError, never one of two clashing keys silently winning — and over HTTP a 422 in
the one error shape, after which the app is ready and no job folder or dialogue file was
made."""

from __future__ import annotations

import json

import httpx
import pytest

from cosyvoice.cli.jobs import multipart
from cosyvoice.errors import TextError
from cosyvoice.longform.dialogue import parse_script
from cosyvoice.longform.sources import parse_source
from tests.conftest import get_json

DEEP = "[" * 5000 + "]" * 5000
LONG_FIELD = "a" * 200_000

SOURCES = [  # (id, file name, content, the message's start)
    ("jsonl-5000-deep", "l.jsonl", DEEP, "line 1: not valid JSON (nested too deeply"),
    ("jsonl-deep-on-line-3", "l.jsonl", '{"text": "A."}\n\n' + DEEP,
     "line 3: not valid JSON (nested too deeply"),
    ("jsonl-deep-in-a-value", "l.jsonl", '{"text": ' + "[" * 3000 + "]" * 3000 + "}",
     "line 1: not valid JSON (nested too deeply"),
    ("jsonl-deep-object", "l.jsonl", '{"a":' * 2000 + "1" + "}" * 2000,
     "line 1: not valid JSON (nested too deeply"),
    ("jsonl-5-deep", "l.jsonl", '{"text": [[[["x"]]]]}', "line 1: not valid JSON (nested 5"),
    ("jsonl-TEXT-and-text", "l.jsonl", '{"TEXT": "Loud.", "text": "quiet."}',
     "line 1: the keys 'TEXT' and 'text' name the same column"),
    ("jsonl-Voice-and-voice", "l.jsonl", '{"text": "A."}\n{"text": "B.", "Voice": "joe", '
     '"voice": "af_heart"}', "line 2: the keys 'Voice' and 'voice'"),
    ("jsonl-key-twice", "l.jsonl", '{"text": "A.", "text": "B."}',
     "line 1: not valid JSON (the key 'text' appears twice"),
    ("jsonl-array", "l.jsonl", '["A."]', "line 1: write a JSON object"),
    ("jsonl-scalar", "l.jsonl", "42", "line 1: write a JSON object"),
    ("jsonl-nan", "l.jsonl", '{"text": NaN}', "line 1: text must be a string"),
    ("jsonl-null-text", "l.jsonl", '{"text": null}', "line 1: the text is empty"),
    ("jsonl-number-voice", "l.jsonl", '{"text": "A.", "voice": 7}',
     "line 1: voice must be a string"),
    ("jsonl-5000-digit-int", "l.jsonl", '{"text": "A.", "voice": ' + "9" * 5000 + "}",
     "line 1: not valid JSON"),
    ("jsonl-lone-surrogate", "l.jsonl", '{"text": "A \\ud800 B."}', "line 1: holds U+D800"),
    ("jsonl-truncated", "l.jsonl", '{"text": "A.', "line 1: not valid JSON"),
    ("jsonl-unknown-key", "l.jsonl", '{"text": "A.", "speaker": "joe"}', "line 1: columns"),
    ("csv-text-and-Text", "l.csv", "text,Text\nA.,B.\n", "row 1: the CSV header names 'text'"),
    ("csv-voice-twice", "l.csv", "text,voice,voice\nA.,joe,af_heart\n",
     "row 1: the CSV header names 'voice' twice"),
    ("csv-huge-field", "l.csv", f"text\n{LONG_FIELD}\n", "row 2: not valid CSV"),
    ("csv-extra-field", "l.csv", "text\nA.,B.\n", "row 2: 2 fields but the header has 1"),
    ("csv-no-text-column", "l.csv", "voice\njoe\n", "the CSV header: columns"),
    ("csv-traversal-filename", "l.csv", "text,filename\nA.,../../etc/x\n",
     "row 2: filename '../../etc/x.wav'"),
    ("csv-lone-surrogate", "l.csv", "text\nA.\nB \ud800.\n", "row 3: holds U+D800"),
    ("txt-blank", "l.txt", " \n\t\n", "'l.txt' has nothing to speak"),
    ("txt-lone-surrogate", "l.txt", "One.\nTwo \udfff.", "line 2: holds U+DFFF"),
    ("pdf", "l.pdf", "A.", "'l.pdf': a job is a .txt or .md"),
]

SCRIPTS = [  # (id, script, the message's start)
    ("5000-brackets", "[" * 5000, "line 1: the speaker tag is not closed"),
    ("deep-tag", "[joe|" + "[" * 5000, "line 1: the speaker tag is not closed"),
    ("empty-tag", "[joe] Hi.\n[] Hello.", "line 2: the speaker tag [] names no voice"),
    ("no-speaker", "Hello.", "line 1: no speaker yet"),
    ("tag-only", "[joe]", "line 1: the tag [joe] has no text"),
    ("comments-only", "# a\n\n# b", "the script has no lines to speak"),
    ("lone-surrogate", "[joe] Hi.\n[joe] Bye \ud800.", "line 2: holds U+D800"),
    ("too-many-lines", "[joe] Hi.\n" * 201, "line 201: the script has more than 200 lines"),
    ("too-long", "[joe] " + "a" * 20_000, "the script is 20006 characters"),
]


@pytest.mark.parametrize("name, content, message", [s[1:] for s in SOURCES],
                         ids=[s[0] for s in SOURCES])
def test_bad_sources_name_the_line(name, content, message):
    with pytest.raises(TextError) as e:
        parse_source(name, content, None, "", 1000)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("script, message", [s[1:] for s in SCRIPTS],
                         ids=[s[0] for s in SCRIPTS])
def test_bad_scripts_name_the_line(script, message):
    with pytest.raises(TextError) as e:
        parse_script(script, 200, 20_000)
    assert str(e.value).startswith(message)


def test_case_insensitive_keys_still_work_alone():
    [item] = parse_source("l.jsonl", '{"TEXT": "Loud.", "Voice": "joe"}', None, "", 1000)
    assert (item.text, item.voice) == ("Loud.", "joe")
    [item] = parse_source("l.csv", "TEXT,Voice\nLoud.,joe\n", None, "", 1000)
    assert (item.text, item.voice) == ("Loud.", "joe")


# ---- over HTTP, on the real app ------------------------------------------------------------

def _job_folders(app) -> set[str]:
    folder = app.workdir / "jobs"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def _dialogue_files(app) -> set[str]:
    return {p.name for p in app.outputs.glob("*_dialogue_*")}


def _assert_refused(r: httpx.Response, message: str) -> None:
    assert r.status_code == 422, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "code"}
    assert body["error"]["code"] == 422 and body["error"]["message"].startswith(message)


def _assert_ready(app) -> None:
    assert app.proc.poll() is None
    status, body = get_json(app.url + "/health/ready")
    assert status == 200 and body["ready"] is True


@pytest.mark.slow
def test_bad_sources_over_http_are_422_and_store_nothing(running_app):
    before = _job_folders(running_app)
    for _, name, content, message in SOURCES:
        r = httpx.post(running_app.url + "/api/v1/jobs", timeout=60,
                       content=json.dumps({"source_name": name, "content": content}),
                       headers={"Content-Type": "application/json"})
        _assert_refused(r, message)
        if "\ud800" not in content and "\udfff" not in content:  # no UTF-8 bytes for these
            body, ctype = multipart({}, name, content.encode())
            r = httpx.post(running_app.url + "/api/v1/jobs", content=body, timeout=60,
                           headers={"Content-Type": ctype})
            _assert_refused(r, message)
        _assert_ready(running_app)
    assert _job_folders(running_app) == before


@pytest.mark.slow
def test_bad_scripts_over_http_are_422_and_write_nothing(running_app):
    before = _dialogue_files(running_app)
    for _, script, message in SCRIPTS:
        r = httpx.post(running_app.url + "/api/v1/dialogue", timeout=60,
                       content=json.dumps({"script": script}),
                       headers={"Content-Type": "application/json"})
        _assert_refused(r, message)
        _assert_ready(running_app)
    assert _dialogue_files(running_app) == before
