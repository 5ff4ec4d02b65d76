"""Batch jobs on disk: ``<jobs_dir>/<id>/job.json`` (the job, its items and their states,
rewritten atomically after every change), ``items/<filename>.wav`` (each finished item,
renamed into place whole) and, once finished, ``joined.wav`` + ``subtitles.srt`` /
``subtitles.vtt``.

An item is finished when job.json says ``done`` — written only after its file is in place —
so a process killed at any moment leaves at most the item it was rendering to be redone.
On start-up :meth:`JobStore.load` turns ``running`` jobs back into ``queued`` ones (the
runner resumes them) and counts the resume in ``runs``. A job.json that is damaged (not
JSON, a field missing or of the wrong type, an item file name that is not a plain name) is
set aside (:mod:`cosyvoice.state_files`) and the other jobs load; a finished item whose
file is gone is rendered again.

Jobs are ordered by creation time (``created``, sub-second) and then by ``seq``, a number
that grows with each job the folder has held, so the order survives a restart.

A job has a ``kind``: ``batch`` (items to render, the default of older job.json files) or
``fit`` (a voice fit, :mod:`.fit_job`: no items; its spec and progress in ``fit``, its
search state in ``fit_state.json`` beside job.json). Both kinds share the queue, the runner,
cancel, resume and the damaged-file handling.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from cosyvoice.errors import ConflictError, NotFoundError, QueueFullError
from cosyvoice.files import write_json_atomic
from cosyvoice.longform.items import FILENAME, Item
from cosyvoice.state_files import DamagedFile, ensure_dir, is_set_aside, read_json

logger = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
BATCH, FIT = "batch", "fit"
KINDS = (BATCH, FIT)
UNFINISHED = (QUEUED, RUNNING)
PENDING, ITEM_DONE, ITEM_FAILED = "pending", "done", "failed"
JOB_STATES = (QUEUED, RUNNING, DONE, FAILED, CANCELLED)
ITEM_STATES = (PENDING, ITEM_DONE, ITEM_FAILED)


class JobStore:
    """Every job of ``root``, held in memory and mirrored to disk under one lock (one app
    process owns the folder: the pidfile sees to that)."""

    def __init__(self, root: Path, max_queued: int) -> None:
        self.root = Path(root)
        self.max_queued = max_queued
        self._lock = threading.RLock()
        self._jobs: dict[str, dict] = {}
        self._seq = 0  # the highest ``seq`` of any job so far

    def load(self) -> list[str]:
        """Read every job folder (a damaged job.json is set aside); unfinished jobs are
        queued again (their finished items stay finished). Returns the ids resumed."""
        ensure_dir(self.root, "the batch jobs folder")
        resumed = []
        with self._lock:
            for folder in sorted(self.root.iterdir()):
                if folder.name.startswith(".") or is_set_aside(folder) or not folder.is_dir():
                    continue
                job = read_json(folder / "job.json", "batch job",
                                lambda data, name=folder.name: check_job(data, name))
                if job is None:
                    continue
                self._jobs[job["id"]] = job
                self._seq = max(self._seq, job["seq"])
                _redo_lost_items(folder, job)
                if job["state"] in UNFINISHED:
                    job["state"] = QUEUED
                    job["resumed"] = job.get("resumed", 0) + (1 if job.get("runs") else 0)
                    self._save(job)
                    resumed.append(job["id"])
        if resumed:
            logger.info("batch jobs to resume: %s", ", ".join(resumed))
        return resumed

    def create(self, source: str, items: list[Item], options: dict[str, Any],
               kind: str = BATCH, fit: dict[str, Any] | None = None,
               prepare: Callable[[Path], None] | None = None) -> dict:
        """Queue a new job; ``prepare(folder)`` writes its input files before the job is
        visible (a runner never sees a job without them)."""
        with self._lock:
            waiting = sum(j["state"] in UNFINISHED for j in self._jobs.values())
            if waiting >= self.max_queued:
                raise QueueFullError.retry_in(60, f"{waiting} batch jobs are queued or "
                                              "running already (the limit is "
                                              f"{self.max_queued})")
            job_id = f"{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
            now = time.time()
            self._seq += 1
            job = {"id": job_id, "seq": self._seq, "kind": kind, "source": source,
                   "state": QUEUED, "created": now,
                   "updated": now, "error": "", "options": options, "runs": [],
                   "resumed": 0, "sample_rate": None,
                   "items": [{**it.to_dict(), "state": PENDING, "seconds": None,
                              "error": "", "attempts": 0, "elapsed_s": None}
                             for it in items]}
            if fit is not None:
                job["fit"] = fit
            ensure_dir(self.root, "the batch jobs folder")
            (self.root / job_id / "items").mkdir(parents=True)
            if prepare is not None:
                try:
                    prepare(self.root / job_id)
                except BaseException:
                    shutil.rmtree(self.root / job_id, ignore_errors=True)
                    raise
            self._jobs[job_id] = job
            self._save(job)
            return self.summary(job_id)

    # ---- reading ---------------------------------------------------------------------
    def get(self, job_id: str) -> dict:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise NotFoundError(f"no batch job {job_id!r}; GET /api/v1/jobs lists them")
            return json.loads(json.dumps(job))  # a copy the caller may keep

    def summary(self, job_id: str, items: bool = False) -> dict:
        job = self.get(job_id)
        states = [it["state"] for it in job["items"]]
        chars = [len(it["text"]) for it in job["items"]]
        done_chars = sum(c for c, s in zip(chars, states) if s != PENDING)
        out = {k: job[k] for k in ("id", "kind", "source", "state", "created", "updated",
                                   "error", "resumed", "options")}
        out.update(total=len(states), done=states.count(ITEM_DONE),
                   failed=states.count(ITEM_FAILED), pending=states.count(PENDING),
                   progress=round(done_chars / max(sum(chars), 1), 4),
                   audio_s=round(sum(it["seconds"] or 0 for it in job["items"]), 3),
                   runs=len(job["runs"]),
                   result=f"/api/v1/jobs/{job_id}/result" if job["state"] in (
                       DONE, CANCELLED) else None)
        if job["kind"] == FIT:  # progress by the fit's clock; its result is a voice
            out.update(_fit_progress(job))
            out["result"] = out["result"] if job["state"] == DONE else None
        if items:
            out["items"] = [{k: it.get(k, "") for k in (
                "where", "voice", "filename", "state", "seconds", "error", "notes", "attempts")}
                for it in job["items"]]
        return out

    def unfinished(self, kind: str) -> list[dict]:
        """The queued or running jobs of ``kind`` (copies), oldest first."""
        with self._lock:
            jobs = sorted((j for j in self._jobs.values()
                           if j["kind"] == kind and j["state"] in UNFINISHED), key=_order)
            return json.loads(json.dumps(jobs))

    def list(self) -> list[dict]:
        """Every job's summary, newest first."""
        with self._lock:
            ids = [j["id"] for j in sorted(self._jobs.values(), key=_order, reverse=True)]
        return [self.summary(i) for i in ids]

    def next_runnable(self) -> str | None:
        """The oldest queued or running job."""
        with self._lock:
            queued = sorted((j for j in self._jobs.values() if j["state"] in UNFINISHED),
                            key=_order)
        return queued[0]["id"] if queued else None

    def folder(self, job_id: str) -> Path:
        return self.root / self.get(job_id)["id"]

    # ---- changes ---------------------------------------------------------------------
    def update(self, job_id: str, **fields: Any) -> dict:
        with self._lock:
            job = self._jobs[job_id]
            job.update(fields)
            self._save(job)
            return job

    def start_run(self, job_id: str) -> bool:
        """Mark the job running (a new entry in ``runs``); False if it was cancelled."""
        with self._lock:
            job = self._jobs[job_id]
            if job["state"] not in UNFINISHED:
                return False
            job["state"] = RUNNING
            job["runs"].append({"started": time.time(), "pid": os.getpid()})
            self._save(job)
            return True

    def item_started(self, job_id: str, index: int) -> None:
        with self._lock:
            self._jobs[job_id]["items"][index]["attempts"] += 1
            self._save(self._jobs[job_id])

    def item_finished(self, job_id: str, index: int, *, seconds: float | None = None,
                      elapsed_s: float | None = None, error: str = "",
                      sample_rate: int | None = None, notes: str = "") -> None:
        with self._lock:
            job = self._jobs[job_id]
            item = job["items"][index]
            item.update(state=ITEM_FAILED if error else ITEM_DONE, seconds=seconds,
                        elapsed_s=elapsed_s, error=error, notes=notes)
            if sample_rate:
                job["sample_rate"] = sample_rate
            self._save(job)

    def cancel(self, job_id: str) -> dict:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise NotFoundError(f"no batch job {job_id!r}; GET /api/v1/jobs lists them")
            if job["state"] not in UNFINISHED:
                raise ConflictError(f"batch job {job_id} is {job['state']} already")
            job["state"] = CANCELLED
            self._save(job)
        return self.summary(job_id)

    def state(self, job_id: str) -> str:
        with self._lock:
            return self._jobs[job_id]["state"]

    def _save(self, job: dict) -> None:
        job["updated"] = time.time()
        folder = self.root / job["id"]
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / "job.json", job)


def _fit_progress(job: dict) -> dict:
    """A fit job's ``fit``, ``progress`` (0–1) and ``eta_s``: as written after its last
    generation, counted down since while it runs (the ETA is the time per generation
    measured so far times the generations that still fit its budget)."""
    p = job["fit"].get("progress") or {}
    eta, fraction = p.get("eta_s"), float(p.get("fraction") or 0.0)
    if job["state"] == RUNNING and isinstance(p.get("at"), int | float) and eta is not None:
        since = max(0.0, time.time() - p["at"])
        elapsed, eta = float(p.get("elapsed_s") or 0.0) + since, max(0.0, eta - since)
        fraction = min(0.99, elapsed / max(elapsed + eta, 1e-9))
    elif job["state"] == DONE:
        eta, fraction = 0.0, 1.0
    return {"fit": job["fit"], "progress": round(fraction, 4),
            "eta_s": None if eta is None else round(eta, 1)}


def _order(job: dict) -> tuple:
    """Creation order: the time (sub-second), then the store's counter, then the id."""
    return job["created"], job["seq"], job["id"]


def _redo_lost_items(folder: Path, job: dict) -> None:
    """A finished item whose file is gone is pending again: an unfinished job renders it
    in its turn, a done one is queued again (a cancelled or failed one keeps its state)."""
    ensure_dir(folder / "items", "a batch job's items folder")
    lost = [it for it in job["items"] if it["state"] == ITEM_DONE
            and not (folder / "items" / it["filename"]).is_file()]
    for it in lost:
        it.update(state=PENDING, seconds=None, elapsed_s=None)
    if lost:
        logger.warning("batch job %s: %d finished item file(s) missing, to render again: %s",
                       job["id"], len(lost), ", ".join(it["filename"] for it in lost[:5]))
        if job["state"] == DONE:
            job["state"] = QUEUED


# ---- the check of a job.json read back --------------------------------------------------
_JOB_FIELDS: dict[str, tuple[tuple[type, ...], Any]] = {  # name: (types, default)
    "kind": ((str,), BATCH), "source": ((str,), ""), "updated": ((int, float), None),
    "error": ((str,), ""), "options": ((dict,), {}), "runs": ((list,), []), "resumed": ((int,), 0),
    "sample_rate": ((int, type(None)), None), "seq": ((int,), 0)}
_ITEM_FIELDS: dict[str, tuple[tuple[type, ...], Any]] = {
    "voice": ((str, type(None)), None), "instruction": ((str,), ""), "where": ((str,), ""),
    "group": ((str,), ""), "seconds": ((int, float, type(None)), None),
    "error": ((str,), ""), "attempts": ((int,), 0), "elapsed_s": ((int, float, type(None)), None),
    "notes": ((str,), "")}
_OPTION_FIELDS: dict[str, tuple[type, ...]] = {
    "engine": (str, type(None)), "voice": (str, type(None)), "instruction": (str,),
    "speed": (int, float), "seed": (int, type(None)), "gap_s": (int, float),
    "group_gap_s": (int, float)}


def check_job(data: Any, job_id: str) -> dict:
    """A job.json read back: the job, its missing optional fields filled in; DamagedFile
    naming the first field that is missing or wrong (the id must be the folder's name,
    states known, numbers finite, item file names plain)."""
    if not isinstance(data, dict):
        raise DamagedFile("not a JSON object")
    if data.get("id") != job_id:
        raise DamagedFile(f"id is {data.get('id')!r}, not the folder's name {job_id!r}")
    if data.get("state") not in JOB_STATES:
        raise DamagedFile(f"state {data.get('state')!r} is not one of {', '.join(JOB_STATES)}")
    _need(data, "created", (int, float), "")
    job = {**data, **_filled(data, _JOB_FIELDS, "")}
    if job["updated"] is None:
        job["updated"] = job["created"]
    for key, types in _OPTION_FIELDS.items():
        if key in job["options"]:
            _need(job["options"], key, types, "options.")
    if not all(isinstance(r, dict) for r in job["runs"]):
        raise DamagedFile("runs must be a list of objects")
    if job["kind"] not in KINDS:
        raise DamagedFile(f"kind {job['kind']!r} is not one of {', '.join(KINDS)}")
    if job["kind"] == FIT:
        _need(data, "fit", (dict,), "")
        for key, types in _FIT_FIELDS.items():
            _need(data["fit"], key, types, "fit.")
    items = data.get("items")
    if not isinstance(items, list):
        raise DamagedFile("items must be a list")
    job["items"] = [_check_item(it, f"items[{i}].") for i, it in enumerate(items)]
    return job


_FIT_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,), "lang": (str,), "budget_s": (int, float), "config": (dict,)}


def _check_item(item: Any, where: str) -> dict:
    if not isinstance(item, dict):
        raise DamagedFile(f"{where[:-1]} is not an object")
    _need(item, "text", (str,), where)
    _need(item, "filename", (str,), where)
    if not FILENAME.match(item["filename"]):
        raise DamagedFile(f"{where}filename {item['filename']!r} is not a plain file name")
    if item.get("state") not in ITEM_STATES:
        raise DamagedFile(f"{where}state {item.get('state')!r} is not one of "
                          f"{', '.join(ITEM_STATES)}")
    return {**item, **_filled(item, _ITEM_FIELDS, where)}


def _filled(data: dict, fields: dict[str, tuple[tuple[type, ...], Any]], where: str) -> dict:
    """The optional ``fields`` of ``data``: checked when present, else their defaults."""
    out = {}
    for key, (types, default) in fields.items():
        if key in data:
            _need(data, key, types, where)
            out[key] = data[key]
        else:
            out[key] = json.loads(json.dumps(default))  # a fresh copy of a list or dict
    return out


def _need(data: dict, key: str, types: tuple[type, ...], where: str) -> None:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        raise DamagedFile(f"{where}{key} is missing")
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if ok and isinstance(value, float):
        ok = math.isfinite(value)
    if not ok:
        names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
        raise DamagedFile(f"{where}{key} is {value!r:.40}; expected {names}")


_MISSING = object()
# what a fit job adds to its result zip (written by .fit_job)
RESULT_FILES = ("before.wav", "after.wav", "fit.json")


def result_zip(store: JobStore, job_id: str) -> Path:
    """``result.zip`` of a finished (or cancelled) job: the item files, joined.wav,
    subtitles.srt/.vtt and job.json; built once, atomically."""
    summary = store.summary(job_id)
    if summary["result"] is None:
        raise ConflictError(f"batch job {job_id} is {summary['state']}; its result is ready "
                            f"when it is done ({summary['done']}/{summary['total']} items so far)")
    folder = store.folder(job_id)
    out = folder / "result.zip"
    if out.exists() and out.stat().st_mtime >= summary["updated"]:
        return out
    fd, tmp = tempfile.mkstemp(prefix=".partial-", suffix=".zip", dir=folder)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
            for path in sorted((folder / "items").glob("*.wav")):
                z.write(path, f"items/{path.name}")
            for name in ("joined.wav", "subtitles.srt", "subtitles.vtt", "job.json",
                         *RESULT_FILES):
                if (folder / name).exists():
                    z.write(folder / name, name)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def move_into(src: Path, dest: Path) -> None:
    """Rename ``src`` to ``dest`` (a copy first when they are on different disks)."""
    try:
        os.replace(src, dest)
    except OSError:
        tmp = dest.with_name(f".partial-{dest.name}")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
        src.unlink(missing_ok=True)
