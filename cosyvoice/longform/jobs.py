"""Batch jobs on disk: ``<jobs_dir>/<id>/job.json`` (the job, its items and their states,
rewritten atomically after every change), ``items/<filename>.wav`` (each finished item,
renamed into place whole) and, once finished, ``joined.wav`` + ``subtitles.srt`` /
``subtitles.vtt``.

An item is finished when job.json says ``done`` — written only after its file is in place —
so a process killed at any moment leaves at most the item it was rendering to be redone.
On start-up :meth:`JobStore.load` turns ``running`` jobs back into ``queued`` ones (the
runner resumes them) and counts the resume in ``runs``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

from cosyvoice.errors import ConflictError, NotFoundError, QueueFullError
from cosyvoice.files import write_json_atomic
from cosyvoice.longform.items import Item

logger = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
UNFINISHED = (QUEUED, RUNNING)
PENDING, ITEM_DONE, ITEM_FAILED = "pending", "done", "failed"



class JobStore:
    """Every job of ``root``, held in memory and mirrored to disk under one lock (one app
    process owns the folder: the pidfile sees to that)."""

    def __init__(self, root: Path, max_queued: int) -> None:
        self.root = Path(root)
        self.max_queued = max_queued
        self._lock = threading.RLock()
        self._jobs: dict[str, dict] = {}

    def load(self) -> list[str]:
        """Read every job folder; unfinished jobs are queued again (their finished items
        stay finished). Returns the ids resumed."""
        self.root.mkdir(parents=True, exist_ok=True)
        resumed = []
        with self._lock:
            for path in sorted(self.root.glob("*/job.json")):
                try:
                    job = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError) as e:
                    logger.warning("skipping unreadable job %s: %s", path, e)
                    continue
                self._jobs[job["id"]] = job
                if job["state"] in UNFINISHED:
                    job["state"] = QUEUED
                    job["resumed"] = job.get("resumed", 0) + (1 if job.get("runs") else 0)
                    self._save(job)
                    resumed.append(job["id"])
        if resumed:
            logger.info("batch jobs to resume: %s", ", ".join(resumed))
        return resumed

    def create(self, source: str, items: list[Item], options: dict[str, Any]) -> dict:
        with self._lock:
            waiting = sum(j["state"] in UNFINISHED for j in self._jobs.values())
            if waiting >= self.max_queued:
                raise QueueFullError.retry_in(60, f"{waiting} batch jobs are queued or "
                                              "running already (the limit is "
                                              f"{self.max_queued})")
            job_id = f"{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
            now = time.time()
            job = {"id": job_id, "source": source, "state": QUEUED, "created": now,
                   "updated": now, "error": "", "options": options, "runs": [],
                   "resumed": 0, "sample_rate": None,
                   "items": [{**it.to_dict(), "state": PENDING, "seconds": None,
                              "error": "", "attempts": 0, "elapsed_s": None}
                             for it in items]}
            (self.root / job_id / "items").mkdir(parents=True)
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
        out = {k: job[k] for k in ("id", "source", "state", "created", "updated", "error",
                                   "resumed", "options")}
        out.update(total=len(states), done=states.count(ITEM_DONE),
                   failed=states.count(ITEM_FAILED), pending=states.count(PENDING),
                   progress=round(done_chars / max(sum(chars), 1), 4),
                   audio_s=round(sum(it["seconds"] or 0 for it in job["items"]), 3),
                   runs=len(job["runs"]),
                   result=f"/api/v1/jobs/{job_id}/result" if job["state"] in (
                       DONE, CANCELLED) else None)
        if items:
            out["items"] = [{k: it.get(k, "") for k in (
                "where", "voice", "filename", "state", "seconds", "error", "notes", "attempts")}
                for it in job["items"]]
        return out

    def list(self) -> list[dict]:
        with self._lock:
            ids = sorted(self._jobs, reverse=True)
        return [self.summary(i) for i in ids]

    def next_runnable(self) -> str | None:
        with self._lock:
            queued = sorted(i for i, j in self._jobs.items() if j["state"] in UNFINISHED)
        return queued[0] if queued else None

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
            for name in ("joined.wav", "subtitles.srt", "subtitles.vtt", "job.json"):
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
