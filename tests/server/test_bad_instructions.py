"""The bad-input catalogue, instructions and unused prompts: one limit for an instruction's
length (``INSTRUCTION_MAX_CHARS``) on every surface that takes one, and a note wherever a
prompt recording is sent but not used (preset mode speaks the chosen voice).

Surfaces: REST ``/api/v1/tts``, OpenAI ``/v1/audio/speech`` (``instructions``), REST batch
jobs (the job's instruction and an item's own), REST dialogue (a line's ``[voice|…]`` tag),
the Synthesis tab's ``/generate`` and the Batch tab's ``/job_submit`` (gradio_client: the
page's ``max_length`` is not checked by Gradio's server, so the core must check). One app
for the module (the session's ``running_app``).
"""

from __future__ import annotations

import json
from urllib.parse import unquote

import httpx
import pytest
from gradio_client import Client, handle_file

from cosyvoice.engine.base import INSTRUCTION_MAX_CHARS
from cosyvoice.pipeline import PROMPT_UNUSED_NOTE
from tests.conftest import RunningApp, get_json

pytestmark = pytest.mark.slow

TOO_LONG = ("speak happily and a bit faster, " * 40)[: INSTRUCTION_MAX_CHARS + 1]
LIMIT = f"{INSTRUCTION_MAX_CHARS}"
UNUSED = PROMPT_UNUSED_NOTE.split(":")[0]  # "the prompt recording was not used"


@pytest.fixture(scope="module")
def client(running_app: RunningApp) -> Client:
    return Client(running_app.url, verbose=False)


@pytest.fixture
def ready_after(running_app: RunningApp):
    yield
    status, body = get_json(running_app.url + "/health/ready", timeout=10)
    assert status == 200 and body["ready"] is True, body


def _limit_named(message: str) -> None:
    assert LIMIT in message.replace(",", ""), message
    assert "instruction" in message.lower(), message


REST = [
    pytest.param("/api/v1/tts", {"text": "Hello.", "mode": "instruct",
                                 "instruction": TOO_LONG}, id="tts"),
    pytest.param("/v1/audio/speech", {"input": "Hello.", "instructions": TOO_LONG},
                 id="openai"),
    pytest.param("/api/v1/jobs", {"source_name": "a.txt", "content": "Hello there.",
                                  "instruction": TOO_LONG}, id="job"),
    pytest.param("/api/v1/jobs", {"source_name": "a.jsonl", "content": json.dumps(
        {"text": "Hello there.", "instruction": TOO_LONG})}, id="job-item"),
    pytest.param("/api/v1/dialogue", {"script": f"[af_heart|{TOO_LONG}] Hello there."},
                 id="dialogue-line"),
]


@pytest.mark.parametrize("route, body", REST)
def test_rest_refuses_an_instruction_over_the_limit(running_app, ready_after, route, body):
    r = httpx.post(running_app.url + route, json=body, timeout=120)
    assert r.status_code == 422, r.text[:300]
    _limit_named(r.json()["error"]["message"])


def test_the_synthesis_tab_refuses_an_instruction_over_the_limit(client, ready_after):
    with pytest.raises(Exception) as info:
        client.predict("instruct", "Hello.", None, None, "", 1.0, None, 1.0, TOO_LONG,
                       api_name="/generate")
    _limit_named(str(info.value))


def test_the_batch_tab_refuses_an_instruction_over_the_limit(client, ready_after, tmp_path):
    source = tmp_path / "chapter.txt"
    source.write_text("Hello there.", encoding="utf-8")
    with pytest.raises(Exception) as info:
        client.predict(handle_file(source), None, TOO_LONG, api_name="/job_submit")
    _limit_named(str(info.value))


def test_an_instruction_at_the_limit_is_not_refused_for_its_length(client, ready_after):
    """The same limit everywhere: exactly INSTRUCTION_MAX_CHARS passes the length check
    (the instruction's words may still be refused or noted for what they say)."""
    at_limit = TOO_LONG[:INSTRUCTION_MAX_CHARS]
    try:
        client.predict("instruct", "Hello.", None, None, "", 1.0, 3, 1.0, at_limit,
                       api_name="/generate")
    except Exception as e:  # noqa: BLE001 - only the reason matters
        assert LIMIT not in str(e).replace(",", ""), e


def test_a_prompt_sent_in_preset_mode_is_noted_rest(running_app, real_female_prompt,
                                                   ready_after):
    r = httpx.post(running_app.url + "/api/v1/tts", timeout=120,
                   data={"text": "Hello there.", "mode": "preset", "seed": "1"},
                   files={"prompt": ("me.mp3", real_female_prompt.read_bytes())})
    assert r.status_code == 200, r.text[:300]
    assert UNUSED in unquote(r.headers.get("x-cosyvoice-notes", "")), r.headers


def test_a_prompt_sent_in_preset_mode_is_noted_ui(client, real_female_prompt, ready_after):
    _, status = client.predict("preset", "Hello there.", None, handle_file(real_female_prompt),
                               "", 1.0, 1, 1.0, api_name="/generate")
    assert UNUSED in status, status


def test_a_prompt_used_for_cloning_gets_no_such_note(client, real_female_prompt, ready_after):
    _, status = client.predict("clone", "Hello there.", None, handle_file(real_female_prompt),
                               "", 1.0, 1, 1.0, api_name="/generate")
    assert UNUSED not in status, status
