"""The CLI's long-form commands (hooked into :mod:`cosyvoice.cli`).

    python -m cosyvoice dialogue script.txt -o talk.wav [--srt talk.srt] [--gap 0.25]
    python -m cosyvoice job submit book.md [--voice af_heart] [--wait] [--server URL]
    python -m cosyvoice job status ID [--wait]
    python -m cosyvoice job result ID -o book.zip
    python -m cosyvoice job list | cancel ID

``dialogue`` runs in this process (models built as the app builds them). ``job`` talks to a
running app (``--server``, env ``COSYVOICE_SERVER``, default ``http://127.0.0.1:7860``):
jobs are the app's background work, persisted in its jobs folder and resumed after its
restarts, so the CLI only submits, watches (a progress bar on stderr) and downloads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

DEFAULT_SERVER = "http://127.0.0.1:7860"
POLL_S = 1.0
BAR = 30


class ServerError(Exception):
    """The app answered with an error (its message) or could not be reached."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def add_dialogue(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("dialogue", parents=[common], help="render a dialogue script of "
                       "several voices into one file",
                       description="Render a dialogue script ('[voice] text' or "
                       "'[voice|instruction] text' per line; see docs/creator.md) into one "
                       "audio file, with a progress line per line and the per-line table.")
    p.add_argument("file", type=Path, help="the script (UTF-8; '-': stdin)")
    p.add_argument("-o", "--output", required=True, help="the joined audio file")
    p.add_argument("--srt", type=Path, help="also write SubRip subtitles (one cue per line)")
    p.add_argument("--vtt", type=Path, help="also write WebVTT subtitles")
    p.add_argument("--gap", type=float, default=0.25, help="silence between lines (s)")
    p.add_argument("--speaker-gap", type=float, default=0.6,
                   help="silence where the speaker changes (s)")
    p.add_argument("--speed", type=float, default=1.0)
    p.add_argument("--seed", type=int)
    p.set_defaults(func=cmd_dialogue)


def add_job(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("job", parents=[common], help="batch jobs on a running app (submit, "
                       "status, result, list, cancel)")
    p.add_argument("--server", default=os.environ.get("COSYVOICE_SERVER", DEFAULT_SERVER),
                   help="the app's URL [env COSYVOICE_SERVER, %(default)s]")
    js = p.add_subparsers(dest="job_command", required=True, metavar="ACTION")
    s = js.add_parser("submit", help="upload a .txt/.md/.csv/.jsonl as a job")
    s.add_argument("file", type=Path)
    s.add_argument("--voice", help="voice of items that name none")
    s.add_argument("--instruction", default="")
    s.add_argument("--gap", type=float, default=0.5)
    s.add_argument("--group-gap", type=float, default=1.5)
    s.add_argument("--wait", action="store_true", help="show progress until it finishes")
    s.set_defaults(func=cmd_job_submit)
    st = js.add_parser("status", help="a job's progress")
    st.add_argument("id")
    st.add_argument("--wait", action="store_true", help="show progress until it finishes")
    st.set_defaults(func=cmd_job_status)
    r = js.add_parser("result", help="download a finished job's zip")
    r.add_argument("id")
    r.add_argument("-o", "--output", type=Path, required=True)
    r.set_defaults(func=cmd_job_result)
    ls = js.add_parser("list", help="every job, newest first")
    ls.set_defaults(func=cmd_job_list)
    c = js.add_parser("cancel", help="cancel a queued or running job")
    c.add_argument("id")
    c.set_defaults(func=cmd_job_cancel)


# ---- dialogue --------------------------------------------------------------------------
def cmd_dialogue(ns: argparse.Namespace) -> int:
    import dataclasses
    import shutil
    import tempfile

    from cosyvoice.audio.encode import encode
    from cosyvoice.cli import (
        SUFFIX_FORMATS,
        UsageError,
        build_synthesizer,
        settings_for,
        write_output,
    )
    from cosyvoice.longform.dialogue import parse_script, render_dialogue
    from cosyvoice.subtitles import to_srt, to_vtt

    try:
        script = sys.stdin.read() if str(ns.file) == "-" else ns.file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{ns.file}: cannot be read as UTF-8 text ({e})") from e
    settings = settings_for(ns)
    lines = parse_script(script, settings.dialogue_max_lines, settings.dialogue_max_chars)
    scratch = Path(tempfile.mkdtemp(prefix="cosyvoice-cli-"))
    t0 = time.perf_counter()
    try:
        synth = build_synthesizer(dataclasses.replace(settings, outputs_dir=scratch))

        def progress(i: int, n: int, what: str) -> None:
            print(f"{_bar(i / n)} {what}  {time.perf_counter() - t0:6.1f} s", file=sys.stderr,
                  flush=True)

        result = render_dialogue(synth, lines, engine=ns.caps.name, gap_s=ns.gap,
                                 speaker_gap_s=ns.speaker_gap, speed=ns.speed, seed=ns.seed,
                                 progress=progress)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    fmt = SUFFIX_FORMATS.get(Path(ns.output).suffix.lower(), "wav")
    where = write_output(ns.output, encode(result.wav, result.sample_rate, fmt))
    for path, text in ((ns.srt, to_srt(result.cues)), (ns.vtt, to_vtt(result.cues))):
        if path is not None:
            write_output(str(path), text.encode("utf-8"))
    print(f"{'line':>5}  {'voice':<16} {'seconds':>8}  notes")
    for r in result.rows:
        print(f"{r['line']:>5}  {r['voice']:<16} {r['seconds']:>8.2f}  {r['notes']}")
    print(f"{where}  {result.duration_s:.2f} s audio, {len(result.rows)} lines, "
          f"{result.elapsed_s:.1f} s")
    return 0


# ---- jobs ------------------------------------------------------------------------------
def request(server: str, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[bytes, Any]:
    req = urllib.request.Request(server.rstrip("/") + path, data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.read(), r.headers  # case-insensitive
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {e.code}"
        raise ServerError(message, e.code) from None
    except OSError as e:
        raise ServerError(f"cannot reach the app at {server} ({e}); start it (bash run.sh) "
                          "or give --server URL") from None


def get_json(server: str, path: str, method: str = "GET") -> dict:
    return json.loads(request(server, method, path)[0])


def multipart(fields: dict[str, str], name: str, data: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
             .encode() for k, v in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{name}"\r\nContent-Type: text/plain\r\n\r\n'.encode()
                 + data + f"\r\n--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def cmd_job_submit(ns: argparse.Namespace) -> int:
    from cosyvoice.cli import UsageError

    try:
        data = ns.file.read_bytes()
    except OSError as e:
        raise UsageError(f"{ns.file}: {e.strerror or e}") from e
    fields = {"gap_s": str(ns.gap), "group_gap_s": str(ns.group_gap),
              "instruction": ns.instruction}
    if ns.voice:
        fields["voice"] = ns.voice
    if getattr(ns, "engine", None):
        fields["engine"] = ns.engine
    body, ctype = multipart(fields, ns.file.name, data)
    job = json.loads(request(ns.server, "POST", "/api/v1/jobs", body,
                             {"Content-Type": ctype})[0])
    print(job["id"])
    print(f"queued {job['total']} items from {ns.file.name}", file=sys.stderr)
    return watch(ns.server, job["id"]) if ns.wait else 0


def cmd_job_status(ns: argparse.Namespace) -> int:
    if ns.wait:
        return watch(ns.server, ns.id)
    job = get_json(ns.server, f"/api/v1/jobs/{ns.id}")
    print(json.dumps({k: v for k, v in job.items() if k != "items"}, ensure_ascii=False,
                     indent=1))
    return 0


def watch(server: str, job_id: str) -> int:
    """A progress bar on stderr until the job ends; 0 done, 1 failed or cancelled."""
    while True:
        job = get_json(server, f"/api/v1/jobs/{job_id}")
        end = "\n" if job["state"] not in ("queued", "running") else "\r"
        print(f"{_bar(job['progress'])} {job['done']}/{job['total']} items  {job['state']}"
              f"  {job['audio_s']:.0f} s audio", end=end, file=sys.stderr, flush=True)
        if end == "\n":
            if job["error"]:
                print(job["error"], file=sys.stderr)
            return 0 if job["state"] == "done" else 1
        time.sleep(POLL_S)


def cmd_job_result(ns: argparse.Namespace) -> int:
    from cosyvoice.cli import write_output

    data, _ = request(ns.server, "GET", f"/api/v1/jobs/{ns.id}/result")
    print(write_output(str(ns.output), data))
    return 0


def cmd_job_list(ns: argparse.Namespace) -> int:
    for job in get_json(ns.server, "/api/v1/jobs")["jobs"]:
        print(f"{job['id']}  {job['state']:<9} {job['done']:>5}/{job['total']:<5} "
              f"{job['source']}")
    return 0


def cmd_job_cancel(ns: argparse.Namespace) -> int:
    job = get_json(ns.server, f"/api/v1/jobs/{ns.id}", method="DELETE")
    print(f"{job['id']}: {job['state']}")
    return 0


def _bar(fraction: float) -> str:
    n = int(round(max(0.0, min(1.0, fraction)) * BAR))
    return f"[{'#' * n}{'.' * (BAR - n)}] {100 * fraction:3.0f}%"
