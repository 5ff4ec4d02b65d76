"""The bad-input catalogue, Gradio file inputs: a client names a file by its path
(``{"path": ..., "meta": {"_type": "gradio.FileData"}}``), so every event that takes a file
must accept only files uploaded to this app (cosyvoice.server.ui_files).

The events are *enumerated* from the running app's Blocks config (``GET /config``): every
dependency with an input whose API schema is a file (gradio_client's ``value_is_file``),
public or not. A new file-taking event is therefore tried here without being listed, and
each is called the way the page calls it (``/gradio_api/queue/join`` by ``fn_index``, or
``/gradio_api/run/predict`` for events outside the queue). The named ones are also called as
scripts do: raw ``POST /gradio_api/call/<api>`` with its SSE result, and ``gradio_client``
with its uploads switched off (what a client on another machine sends).

Hostile paths, each tried in every file input of every such event:

- a server path: a text file with a unique marker, and an audio file (with the marker in an
  extra RIFF chunk), both outside the app; another user's saved prompt under ``voices/``;
- a symlink inside the upload folder pointing out (a file link and a folder link);
- ``..`` forms: ``<upload folder>/../../…``, a path relative to the app's working folder;
- the upload folder itself, a URL (loopback: the server must fetch nothing), a ``file://``
  URL, a NUL byte, a file dict without ``meta``.

Each must be refused with the guard's message, and the marker must appear in no answer and
no file the app wrote (cache, outputs, jobs, logs): the refused file was never read or
copied. Files uploaded through ``/gradio_api/upload`` still pass (the control), and the
replay dropdown cannot be made to send a server file back.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import soundfile as sf
from gradio_client import Client
from gradio_client.client import Endpoint
from gradio_client.utils import value_is_file

from tests.conftest import ROOT, RunningApp, get_json

pytestmark = pytest.mark.slow

MARKER = "qz7-bait-" + "4e1d90c2"  # split so that this source file never matches a scan
REFUSED = "was not uploaded to this app"
NAMED = {"generate", "generate_stream", "save_voice", "transcribe", "job_submit"}


# --- the app's events, from its config -----------------------------------------------------

def _config(app: RunningApp) -> dict:
    status, body = get_json(app.url + "/config", timeout=30)
    assert status == 200, body
    return body


def file_events(config: dict) -> list[dict]:
    """Every dependency with a file input: ``{"fn", "name", "queue", "file_inputs",
    "defaults"}`` (defaults: each input's initial value, for the other arguments)."""
    comps = {c["id"]: c for c in config["components"]}
    found = []
    for dep in config["dependencies"]:
        inputs = [comps[i] for i in dep["inputs"]]
        files = [k for k, c in enumerate(inputs) if value_is_file(c.get("api_info") or {})]
        if not files:
            continue
        found.append({"fn": dep["id"], "name": dep.get("api_name") or f"fn {dep['id']}",
                      "public": dep.get("api_visibility") == "public",
                      "queue": dep.get("queue") is not False, "file_inputs": files,
                      "defaults": [c.get("props", {}).get("value") for c in inputs]})
    return found


@pytest.fixture(scope="module")
def events(running_app: RunningApp) -> list[dict]:
    return file_events(_config(running_app))


# --- calling an event ------------------------------------------------------------------------

def _sse_lines(url: str, method: str = "GET", **kw) -> list[str]:
    lines = []
    with httpx.stream(method, url, timeout=120, **kw) as r:
        for line in r.iter_lines():
            lines.append(line)
            if line.startswith("data:") and '"process_completed"' in line:
                break
    return lines


def call_as_page(app: RunningApp, event: dict, data: list) -> str:
    """Call ``event`` by fn_index as the browser does; the whole answer as text."""
    session = uuid.uuid4().hex[:12]
    body = {"data": data, "fn_index": event["fn"], "session_hash": session,
            "trigger_id": None, "event_data": None}
    if not event["queue"]:
        r = httpx.post(app.url + "/gradio_api/run/predict", json=body, timeout=120)
        return r.text
    r = httpx.post(app.url + "/gradio_api/queue/join", json=body, timeout=60)
    assert r.status_code == 200, r.text[:300]
    return "\n".join(_sse_lines(f"{app.url}/gradio_api/queue/data?session_hash={session}"))


def call_named(app: RunningApp, api: str, data: list) -> str:
    """Raw ``POST /gradio_api/call/<api>`` and its SSE result, as text."""
    r = httpx.post(f"{app.url}/gradio_api/call/{api}", json={"data": data}, timeout=60)
    assert r.status_code == 200, r.text[:300]
    return "\n".join(_sse_lines(f"{app.url}/gradio_api/call/{api}/{r.json()['event_id']}"))


def _file(path) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": "x.wav"}


def _with_file(event: dict, index: int, value) -> list:
    data = list(event["defaults"])
    data[index] = value
    return data


# --- bait and hostile paths ------------------------------------------------------------------

def _wav_with_marker(src: Path, dst: Path) -> None:
    """A real recording as 16-bit WAV, with MARKER in an extra RIFF chunk (readers skip
    unknown chunks; a copy of the file carries it)."""
    wav, sr = sf.read(src, dtype="float32", always_2d=True)
    sf.write(dst, wav[:, 0], sr, subtype="PCM_16")
    data = bytearray(dst.read_bytes())
    payload = MARKER.encode()
    data += b"mrkr" + struct.pack("<I", len(payload)) + payload
    data[4:8] = struct.pack("<I", len(data) - 8)
    dst.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def upload_folder(running_app: RunningApp, tmp_path_factory) -> Path:
    """Gradio's upload folder of the running app, learnt from a real upload."""
    probe = tmp_path_factory.mktemp("probe") / "probe.txt"
    probe.write_text("probe")
    r = httpx.post(running_app.url + "/gradio_api/upload", timeout=60,
                   files={"files": ("probe.txt", probe.read_bytes())})
    assert r.status_code == 200, r.text[:200]
    return Path(r.json()[0]).parent.parent


@pytest.fixture(scope="module")
def bait(tmp_path_factory, real_male_prompt) -> dict[str, Path]:
    """Files outside the app that carry MARKER: a text and an audio file."""
    folder = tmp_path_factory.mktemp("outside")
    text = folder / "notes.txt"
    text.write_text(f"Meeting notes {MARKER}: call Anna at ten.\n", encoding="utf-8")
    audio = folder / "speech.wav"
    _wav_with_marker(real_male_prompt, audio)
    assert sf.info(audio).duration > 3.0  # still a readable, cloneable recording
    return {"folder": folder, "text": text, "audio": audio}


@pytest.fixture(scope="module")
def saved_prompt(running_app: RunningApp, real_female_prompt) -> Path:
    """Another user's saved voice: its prompt.wav under the app's voices folder."""
    name = f"victim-{uuid.uuid4().hex[:6]}"
    r = httpx.post(running_app.url + "/api/v1/voices", timeout=180, data={"name": name},
                   files={"prompt": ("victim.mp3", real_female_prompt.read_bytes())})
    assert r.status_code == 201, r.text[:300]
    found = [p for p in (running_app.workdir / "voices").glob("*/prompt.wav")
             if json.loads((p.parent / "profile.json").read_text())["name"] == name]
    assert len(found) == 1
    yield found[0]
    httpx.delete(f"{running_app.url}/api/v1/voices/{name}", timeout=30)


@pytest.fixture(scope="module")
def links(upload_folder: Path, bait) -> dict[str, Path]:
    """Symlinks inside the upload folder that point out of it (made as a local user
    could; a client cannot create them)."""
    folder = upload_folder / f"links-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    (folder / "speech.wav").symlink_to(bait["audio"])
    (folder / "outside").symlink_to(bait["folder"], target_is_directory=True)
    yield {"file": folder / "speech.wav", "dir": folder / "outside" / "notes.txt"}
    shutil.rmtree(folder)


def hostile(variant: str, app: RunningApp, upload: Path, bait: dict, links: dict,
            saved_prompt: Path):
    """The value sent for a file input in ``variant``."""
    text, audio = str(bait["text"]), str(bait["audio"])
    up = str(upload)
    paths = {
        "server-text": text,
        "server-audio": audio,
        "saved-voice-prompt": str(saved_prompt),
        "symlink-file": str(links["file"]),
        "symlink-folder": str(links["dir"]),
        "dotdot-from-upload": f"{up}/{os.path.relpath(audio, up)}",
        "dotdot-inside-upload": f"{up}/x/../../{os.path.relpath(text, upload.parent)}",
        "relative-to-app": os.path.relpath(text, ROOT),
        "upload-folder-itself": up,
        "loopback-url": f"{app.url}/health/live",
        "file-url": f"file://{audio}",
        "nul-byte": f"{text}\x00.wav",
    }
    if variant == "no-meta":
        return {"path": text, "orig_name": "x.txt"}
    return _file(paths[variant])


VARIANTS = ["server-text", "server-audio", "saved-voice-prompt", "symlink-file",
            "symlink-folder", "dotdot-from-upload", "dotdot-inside-upload", "relative-to-app",
            "upload-folder-itself", "loopback-url", "file-url", "nul-byte", "no-meta"]


# --- the invariant: nothing read, nothing copied, the app ready -------------------------------

def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def no_leak(running_app: RunningApp, saved_prompt: Path, bait):
    """After the test: the marker is in no file of the app's folders, no copy of the saved
    prompt or the bait audio is in the cache, no voice was added, and the app is ready."""
    voices = set((running_app.workdir / "voices").iterdir())
    yield
    secrets = {_sha(saved_prompt), _sha(bait["audio"])}
    for f in running_app.workdir.rglob("*"):
        if f.is_file() and not f.is_symlink() and f.stat().st_size < 50 * 2**20:
            data = f.read_bytes()
            assert MARKER.encode() not in data, f"the bait's content reached {f}"
            if "cache" in f.relative_to(running_app.workdir).parts:
                assert hashlib.sha256(data).hexdigest() not in secrets, f"copied to {f}"
    assert set((running_app.workdir / "voices").iterdir()) == voices
    status, body = get_json(running_app.url + "/health/ready", timeout=10)
    assert status == 200 and body["ready"] is True, body


def _refused(answer: str) -> bool:
    return REFUSED in answer and MARKER not in answer


# --- the tests -------------------------------------------------------------------------------

def test_the_file_taking_events_are_found(events):
    """The enumeration finds the known file events, named and page-only, so the tests
    below cannot pass by trying nothing."""
    names = {e["name"] for e in events}
    assert NAMED <= names, names
    page_only = [e for e in events if not e["public"]]
    # the prompt's upload and stop_recording, the output's change (subtitles)
    assert len(page_only) >= 3, events


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_file_event_refuses_a_foreign_path(running_app, events, upload_folder, bait,
                                                 links, saved_prompt, no_leak, variant):
    """Each file input of each enumerated event, called as the page calls it."""
    value = hostile(variant, running_app, upload_folder, bait, links, saved_prompt)
    failures = []
    for event in events:
        for index in event["file_inputs"]:
            answer = call_as_page(running_app, event, _with_file(event, index, value))
            if not _refused(answer):
                failures.append(f"{event['name']} input {index}: {answer[-300:]}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("variant", VARIANTS)
def test_named_events_refuse_a_foreign_path_over_http(running_app, events, upload_folder,
                                                      bait, links, saved_prompt, no_leak,
                                                      variant):
    """``POST /gradio_api/call/<api>`` (a script without gradio_client) and the SSE result."""
    value = hostile(variant, running_app, upload_folder, bait, links, saved_prompt)
    failures = []
    for event in (e for e in events if e["public"]):
        for index in event["file_inputs"]:
            answer = call_named(running_app, event["name"], _with_file(event, index, value))
            if not _refused(answer):
                failures.append(f"{event['name']} input {index}: {answer[-300:]}")
    assert not failures, "\n".join(failures)


@pytest.fixture
def hostile_client(running_app: RunningApp, monkeypatch) -> Client:
    """gradio_client as a client on another machine sends a path: as is (its own upload of a
    local file is switched off)."""
    monkeypatch.setattr(Endpoint, "_upload_file", lambda self, f, data_index: f)
    return Client(running_app.url, verbose=False)


def _client_calls(bait_path: str) -> dict[str, Callable[[Client], object]]:
    f = _file(bait_path)
    return {
        "generate": lambda c: c.predict("clone", "Hello there.", None, f, "", 1.0, None,
                                        1.0, api_name="/generate"),
        "generate_stream": lambda c: c.submit("clone", "Hello there.", None, f, "", 1.0,
                                              None, 1.0, api_name="/generate_stream").result(),
        "save_voice": lambda c: c.predict("stolen", f, "", None, "clone", "en",
                                          api_name="/save_voice"),
        "transcribe": lambda c: c.predict(f, "en", api_name="/transcribe"),
        "job_submit": lambda c: c.predict(f, None, "", api_name="/job_submit"),
    }


@pytest.mark.parametrize("variant", ["server-text", "saved-voice-prompt", "symlink-file",
                                     "dotdot-from-upload"])
def test_gradio_client_is_refused(running_app, hostile_client, upload_folder, bait, links,
                                  saved_prompt, no_leak, variant):
    path = hostile(variant, running_app, upload_folder, bait, links, saved_prompt)["path"]
    calls = _client_calls(path)
    assert set(calls) == NAMED
    for name, call in calls.items():
        with pytest.raises(Exception) as info:
            call(hostile_client)
        assert REFUSED in str(info.value) and MARKER not in str(info.value), (name, info.value)


def test_uploaded_files_still_pass_the_guard(running_app, events, no_leak):
    """The control: a file sent through ``/gradio_api/upload`` reaches every event's handler
    (which may refuse it for its own reasons: it is not audio, not UTF-8 text)."""
    control = bytes(range(128, 256)) * 8  # not audio, not UTF-8
    r = httpx.post(running_app.url + "/gradio_api/upload", timeout=60,
                   files={"files": ("control.txt", control)})
    uploaded = _file(r.json()[0])
    for event in events:
        for index in event["file_inputs"]:
            answer = call_as_page(running_app, event, _with_file(event, index, uploaded))
            assert REFUSED not in answer, (event["name"], answer[-300:])
    answer = call_named(running_app, "job_submit", [uploaded, None, ""])
    assert "UTF-8" in answer, answer[-300:]  # the handler read the uploaded copy


def test_replay_dropdown_cannot_send_a_server_file(running_app, bait, no_leak):
    """The history's replay dropdown → audio player takes only this session's results:
    a server path as its value is refused and nothing is sent back."""
    config = _config(running_app)
    comps = {c["id"]: c for c in config["components"]}
    pick = next(d for d in config["dependencies"] if len(d["inputs"]) == 1
                and comps[d["inputs"][0]]["props"].get("elem_id") == "history-pick")
    event = {"fn": pick["id"], "queue": pick.get("queue") is not False}
    for path in (str(bait["audio"]), str(bait["text"])):
        answer = call_as_page(running_app, event, [path])
        assert "not in the list of choices" in answer and MARKER not in answer, answer
        assert "/gradio_api/file=" not in answer, answer
