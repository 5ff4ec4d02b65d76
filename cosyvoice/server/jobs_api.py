"""Batch jobs over HTTP: ``POST /api/v1/jobs`` (upload a .txt/.md/.csv/.jsonl, multipart
``file`` + fields, or JSON with ``content``), ``GET /api/v1/jobs`` (all, newest first),
``GET /api/v1/jobs/{id}`` (progress and items), ``DELETE /api/v1/jobs/{id}`` (cancel; the
finished items stay downloadable), ``GET /api/v1/jobs/{id}/result`` (zip: item files,
joined.wav, subtitles.srt/.vtt, job.json)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from cosyvoice.engine.base import INSTRUCTION_MAX_CHARS, SEED_MAX
from cosyvoice.errors import TextError, UploadTooLargeError
from cosyvoice.longform.jobs import result_zip
from cosyvoice.longform.runner import JobRunner
from cosyvoice.server.errors import error_responses, read_form, read_json, validate_body


class JobBody(BaseModel):
    """Fields of ``POST /api/v1/jobs`` (multipart with a ``file``, or JSON with ``content``)."""

    source_name: str = Field("job.txt", max_length=200, description="the file's name; its "
                             "suffix picks the parser: .txt/.md (chapters), .csv, .jsonl")
    content: str = Field("", description="JSON bodies: the file's text (multipart: the file)")
    voice: str | None = Field(None, max_length=100, description="the voice of items that "
                              "name none; empty = the engine's default for the text")
    instruction: str = Field("", max_length=INSTRUCTION_MAX_CHARS,
                             description="style of items that name none")
    engine: str | None = Field(None, max_length=40)
    speed: float = Field(1.0, ge=0.5, le=2.0)
    seed: int | None = Field(None, ge=0, le=SEED_MAX)
    gap_s: float = Field(0.5, ge=0.0, le=5.0, description="silence between items in joined.wav")
    group_gap_s: float = Field(1.5, ge=0.0, le=5.0, description="silence where the chapter "
                               "(or a list's voice) changes")


async def parse_job(request: Request, max_bytes: int) -> JobBody:
    """JSON with ``content``, or a multipart form with one ``file`` (the body guard lets no
    other media type through, and no body over --max-upload-mb)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return validate_body(JobBody, read_json(await request.body()))
    form = await read_form(request, "send fields and one 'file'", max_part_size=max_bytes)
    fields = {k: v for k, v in form.items() if not isinstance(v, UploadFile)}
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise TextError("send the job as a multipart 'file' (.txt, .md, .csv or .jsonl)")
    raw = await upload.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise UploadTooLargeError(f"the job file is over {max_bytes / 2**20:.0f} MB")
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TextError(f"{upload.filename!r} is not UTF-8 text; save it as UTF-8") from None
    return validate_body(JobBody, {**fields, "content": content,
                                   "source_name": upload.filename or "job.txt"})


def jobs_router(runner: JobRunner) -> APIRouter:
    router = APIRouter()
    store = runner.store
    max_bytes = int(runner.synth.settings.max_upload_mb * 2**20)

    @router.post("/api/v1/jobs", tags=["creator"], status_code=202,
                 responses=error_responses(400, 413, 415, 422, 429),
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/json": {"schema": JobBody.model_json_schema()},
                     "multipart/form-data": {"schema": {"type": "object", "properties": {
                         "file": {"type": "string", "format": "binary"}}}}}}})
    async def submit(request: Request) -> JSONResponse:
        """Queue a batch job; answers 202 with its id and progress (poll GET /api/v1/jobs/ID)."""
        body = await parse_job(request, max_bytes)
        summary = await run_in_threadpool(
            runner.submit, body.source_name, body.content, voice=body.voice,
            instruction=body.instruction, engine=body.engine, speed=body.speed,
            seed=body.seed, gap_s=body.gap_s, group_gap_s=body.group_gap_s)
        return JSONResponse(summary, status_code=202)

    @router.get("/api/v1/jobs", tags=["creator"])
    def list_jobs() -> dict:
        return {"jobs": store.list()}

    @router.get("/api/v1/jobs/{job_id}", tags=["creator"], responses=error_responses(404))
    def job(job_id: str) -> dict:
        """A job's state, progress (0–1 by characters), counts, runs and its items."""
        return store.summary(job_id, items=True)

    @router.delete("/api/v1/jobs/{job_id}", tags=["creator"],
                   responses=error_responses(404, 409))
    def cancel(job_id: str) -> dict:
        """Cancel a queued or running job (the item in flight finishes first)."""
        return store.cancel(job_id)

    @router.get("/api/v1/jobs/{job_id}/result", tags=["creator"], response_class=FileResponse,
                responses=error_responses(404, 409))
    async def result(job_id: str) -> FileResponse:
        path = await run_in_threadpool(result_zip, store, job_id)
        return FileResponse(path, media_type="application/zip",
                            filename=f"cosyvoice-job-{job_id}.zip")

    return router
