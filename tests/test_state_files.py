"""The one gate for the app's state files: a damaged file is set aside (renamed beside
itself, bytes kept), logged and listed, and the reader goes on as if it were missing; a
missing file is just missing; a write after a set-aside never touches the damaged copy.
Each way a file can be damaged is tried: empty, ``{}``, wrong types, truncated JSON,
binary garbage, deep nesting, over the size limit, a folder, a named pipe, a dangling
link loop and a file its reader may not open (checked as an unprivileged user)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from cosyvoice import bounded_json
from cosyvoice.files import write_json_atomic
from cosyvoice.state_files import (
    DAMAGED,
    REGISTRY,
    DamagedFile,
    ensure_dir,
    is_set_aside,
    read_checked,
    read_json,
    read_text,
    set_aside_files,
)

GOOD = {"name": "ok", "size": 3}


def check(data):
    """A reader's check: an object with a string name and an int size."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) \
            or not isinstance(data.get("size"), int):
        raise DamagedFile("name or size missing or of the wrong type")
    return data


def listed_for(path: Path) -> list[dict]:
    return [i for i in set_aside_files() if i["path"] == str(path)]


def only_copy(path: Path) -> Path:
    """The single set-aside copy of ``path`` in its folder."""
    copies = [p for p in path.parent.iterdir() if p.name.startswith(path.name + DAMAGED)]
    assert len(copies) == 1, copies
    return copies[0]


DAMAGE = {
    "empty": b"",
    "empty-object": b"{}",
    "wrong-types": json.dumps({"name": 3, "size": "three"}).encode(),
    "missing-field": json.dumps({"name": "ok"}).encode(),
    "truncated": json.dumps(GOOD).encode()[:9],
    "binary": bytes(range(256)) * 4,
    "utf16": json.dumps(GOOD).encode("utf-16"),
    "deep": b"[" * 5000 + b"]" * 5000,
    "deep-under-recursion-limit": b'{"name": "ok", "size": 3, "x": ' + b"[" * 40 + b"]" * 40
                                  + b"}",
    "nan-list": b"[NaN]",
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_contents_are_set_aside_with_their_bytes(tmp_path, kind):
    path = tmp_path / "state.json"
    path.write_bytes(DAMAGE[kind])
    assert read_json(path, "test file", check) is None
    assert not path.exists()
    copy = only_copy(path)
    assert copy.read_bytes() == DAMAGE[kind]  # kept whole, never emptied
    [item] = listed_for(path)
    assert (item["what"], item["moved_to"]) == ("test file", str(copy)) and item["reason"]
    assert is_set_aside(copy)
    write_json_atomic(path, GOOD)  # a write-back makes a fresh file beside the copy
    assert read_json(path, "test file", check) == GOOD
    assert copy.read_bytes() == DAMAGE[kind]


def test_good_and_missing_files_are_not_set_aside(tmp_path):
    path = tmp_path / "state.json"
    assert read_json(path, "test file", check) is None  # missing: nothing to report
    write_json_atomic(path, GOOD)
    assert read_json(path, "test file", check) == GOOD
    assert read_text(path, "test file") == path.read_text()
    assert list(tmp_path.iterdir()) == [path] and listed_for(path) == []


def test_not_regular_files_are_set_aside_unopened(tmp_path):
    folder, pipe, loop = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    folder.mkdir()
    (folder / "inside.txt").write_text("kept")
    os.mkfifo(pipe)  # opening it to read would block the reader forever
    loop.symlink_to(loop)
    for path in (folder, pipe, loop):
        assert read_json(path, "test file", check) is None
        assert not os.path.lexists(path) and listed_for(path)
    assert (only_copy(folder) / "inside.txt").read_text() == "kept"
    assert only_copy(loop).is_symlink()


def test_over_the_size_limit_is_set_aside(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({**GOOD, "pad": "x" * 5000}))
    assert read_json(path, "test file", check, max_bytes=4096) is None
    assert "is at most 4,096" in listed_for(path)[0]["reason"]
    assert only_copy(path).stat().st_size > 4096


def test_a_required_file_missing_sets_its_unit_aside(tmp_path):
    unit = tmp_path / "voice-1"
    unit.mkdir()
    (unit / "prompt.wav").write_bytes(b"RIFF")
    assert read_json(unit / "profile.json", "saved voice", check, unit=unit,
                     required=True) is None
    assert not unit.exists() and (only_copy(unit) / "prompt.wav").read_bytes() == b"RIFF"
    assert "profile.json is missing" in listed_for(unit)[0]["reason"]


def test_two_set_asides_in_one_second_get_distinct_names(tmp_path):
    path = tmp_path / "lexicon.json"
    for text in ("{", "[", "nope"):
        path.write_text(text)
        assert read_json(path, "the lexicon", check) is None
    copies = sorted(p.read_text() for p in tmp_path.iterdir())
    assert copies == sorted(["{", "[", "nope"])


def test_a_parse_error_outside_the_damage_list_is_not_swallowed(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{}")

    def buggy(_data):
        raise ZeroDivisionError("a bug in the reader, not damage in the file")

    with pytest.raises(ZeroDivisionError):
        read_json(path, "test file", buggy)
    assert path.read_text() == "{}"


def test_ensure_dir_sets_aside_a_file_in_a_folders_place(tmp_path):
    where = tmp_path / "jobs"
    where.write_text("not a folder")
    assert ensure_dir(where, "the batch jobs folder").is_dir()
    assert only_copy(where).read_text() == "not a folder"


def test_the_list_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(REGISTRY, "_items", [])
    for i in range(250):
        path = tmp_path / f"f{i}.json"
        path.write_text("{")
        read_json(path, "test file", check)
    items = set_aside_files()
    assert len(items) == 200 and items[-1]["path"].endswith("f249.json")


def _as_nobody(fn):
    """``fn()`` in a forked child that runs as user ``nobody`` (when we are root, who reads
    any file); its JSON-able result comes back through a pipe."""
    if os.geteuid() != 0:
        return fn()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, run, report, leave without cleanup
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            out = json.dumps(fn())
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = json.dumps({"child_error": repr(e)})
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def test_a_file_the_reader_may_not_open_is_set_aside():
    folder = Path(tempfile.mkdtemp(prefix="state-perm-"))  # outside root's private tmp
    try:
        folder.chmod(0o777)
        path = folder / "job.json"
        path.write_text(json.dumps(GOOD))
        path.chmod(0o000)

        def read():
            return [read_json(path, "batch job", check), set_aside_files()[-1]]

        value, item = _as_nobody(read)
        assert value is None and "Permission denied" in item["reason"]
        assert not path.exists() and json.loads(only_copy(path).read_text()) == GOOD
    finally:
        shutil.rmtree(folder)


def test_read_checked_takes_any_reader(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x00garbage")

    def parse(p: Path) -> bytes:
        data = p.read_bytes()
        if not data.startswith(b"MAGIC"):
            raise RuntimeError("bad magic")
        return data

    assert read_checked(path, "cache", parse) is None
    assert "RuntimeError: bad magic" in listed_for(path)[0]["reason"]


@pytest.mark.parametrize("text, message", [
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ("[" * 40 + "]" * 40, "nested 40 levels deep"),
    ('{"a": 1, "a": 2}', "appears twice"),
    (b"\xff\xfe{}", "not UTF-8"),
    ('{"a": ', "Expecting value"),
])
def test_bounded_json_refusals(text, message):
    with pytest.raises(bounded_json.JsonError, match=message):
        bounded_json.loads(text, unique_keys=True)


def test_bounded_json_depth_and_duplicates_allowed_when_not_asked():
    assert bounded_json.loads('{"a": 1, "a": 2}') == {"a": 2}
    assert bounded_json.nesting_depth(bounded_json.loads("[[1], {\"k\": [2]}]")) == 3
    assert bounded_json.loads("[" * 32 + "]" * 32) is not None
