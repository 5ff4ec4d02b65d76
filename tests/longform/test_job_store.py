"""The batch job store on disk: jobs ordered by creation (sub-second, then a counter that
survives a restart — never by the id's random suffix), a damaged job.json set aside while
the others load, and a finished item whose file is gone rendered again."""

from __future__ import annotations

import json

import pytest

from cosyvoice.longform import jobs
from cosyvoice.longform.items import Item
from cosyvoice.longform.jobs import JobStore, check_job
from cosyvoice.state_files import DAMAGED, DamagedFile, set_aside_files


def make(root, n: int) -> tuple[JobStore, list[str]]:
    store = JobStore(root, max_queued=100)
    store.load()
    ids = [store.create(f"s{i}.txt", [Item(f"Text {i}.", "joe", filename="0001.wav")],
                        {})["id"] for i in range(n)]
    return store, ids


def test_jobs_created_in_one_second_keep_their_order_across_a_restart(tmp_path):
    store, ids = make(tmp_path, 12)
    assert len({i[:15] for i in ids}) <= 2  # the same second (or two): ids alone can't order
    assert [j["id"] for j in store.list()] == ids[::-1]  # newest first
    assert store.next_runnable() == ids[0]  # oldest first
    again = JobStore(tmp_path, max_queued=100)
    again.load()
    assert [j["id"] for j in again.list()] == ids[::-1]
    assert again.next_runnable() == ids[0]
    new = again.create("late.txt", [Item("Late.", "joe", filename="0001.wav")], {})["id"]
    assert again.list()[0]["id"] == new  # the counter carried on after the restart


def test_a_clock_tie_is_broken_by_the_counter(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs.time, "time", lambda: 1_800_000_000.0)
    store, ids = make(tmp_path, 8)
    assert [j["id"] for j in store.list()] == ids[::-1]
    again = JobStore(tmp_path, max_queued=100)
    again.load()
    assert [j["id"] for j in again.list()] == ids[::-1]


def job_json(job_id: str, **changes) -> dict:
    job = {"id": job_id, "source": "a.txt", "state": "done", "created": 1.5, "updated": 2.0,
           "error": "", "options": {"speed": 1.0, "gap_s": 0.5}, "runs": [], "resumed": 0,
           "sample_rate": 24000,
           "items": [{"text": "Hi.", "voice": "joe", "instruction": "", "where": "line 1",
                      "group": "joe", "filename": "0001.wav", "state": "done",
                      "seconds": 1.0, "error": "", "attempts": 1, "elapsed_s": 0.1}]}
    job.update(changes)
    return job


@pytest.mark.parametrize("changes, message", [
    ({"id": "other"}, "not the folder's name"),
    ({"state": "exploded"}, "state 'exploded'"),
    ({"created": "yesterday"}, "created is 'yesterday'"),
    ({"created": True}, "created is True"),
    ({"options": []}, "options is []"),
    ({"options": {"speed": "fast"}}, "options.speed"),
    ({"items": {"0": {}}}, "items must be a list"),
    ({"items": [{"text": "Hi.", "filename": "../../etc/passwd", "state": "done"}]},
     "not a plain file name"),
    ({"items": [{"text": 3, "filename": "a.wav", "state": "done"}]}, "items[0].text is 3"),
    ({"items": [{"filename": "a.wav", "state": "done"}]}, "items[0].text is missing"),
    ({"items": [{"text": "x", "filename": "a.wav", "state": "done", "attempts": 1.5}]},
     "items[0].attempts"),
    ({"runs": ["yesterday"]}, "runs must be a list of objects"),
    ({"sample_rate": "24k"}, "sample_rate"),
])
def test_check_job_names_what_is_wrong(changes, message):
    with pytest.raises(DamagedFile) as e:
        check_job(job_json("j1", **changes), "j1")
    assert message in str(e.value)


def test_check_job_fills_optional_fields_of_an_older_file():
    job = job_json("j1")
    for key in ("source", "updated", "error", "options", "runs", "resumed", "sample_rate"):
        del job[key]
    job["items"] = [{"text": "Hi.", "filename": "0001.wav", "state": "pending"}]
    out = check_job(job, "j1")
    assert (out["seq"], out["updated"], out["options"], out["runs"]) == (0, 1.5, {}, [])
    assert out["items"][0]["voice"] is None and out["items"][0]["attempts"] == 0


def test_damaged_job_files_are_set_aside_and_the_rest_load(tmp_path):
    good = tmp_path / "good"
    (good / "items").mkdir(parents=True)
    (good / "items" / "0001.wav").write_bytes(b"RIFF")
    (good / "job.json").write_text(json.dumps(job_json("good")))
    damaged = {"empty": b"", "object": b"{}", "garbage": b"\x00\xff" * 64,
               "truncated": json.dumps(job_json("truncated")).encode()[:50],
               "types": json.dumps(job_json("types", items="none")).encode()}
    for name, data in damaged.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "job.json").write_bytes(data)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "job.json").mkdir()
    store = JobStore(tmp_path, max_queued=10)
    store.load()
    assert [j["id"] for j in store.list()] == ["good"]
    for name, data in damaged.items():
        [copy] = (tmp_path / name).glob("job.json" + DAMAGED + "*")
        assert copy.read_bytes() == data
    listed = {i["path"] for i in set_aside_files()}
    assert {str(tmp_path / n / "job.json") for n in [*damaged, "folder"]} <= listed
    again = JobStore(tmp_path, max_queued=10)  # the set-aside copies are not read again
    again.load()
    assert [j["id"] for j in again.list()] == ["good"]


def test_a_finished_item_whose_file_is_gone_is_rendered_again(tmp_path):
    folder = tmp_path / "j1"
    folder.mkdir()  # no items/ folder at all: it is made again
    (folder / "job.json").write_text(json.dumps(job_json("j1")))
    store = JobStore(tmp_path, max_queued=10)
    assert store.load() == ["j1"]  # the done job is queued again
    summary = store.summary("j1", items=True)
    assert (summary["state"], summary["pending"]) == ("queued", 1)
    assert (folder / "items").is_dir()
