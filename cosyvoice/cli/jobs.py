"""``job``: batch jobs on a running app (submit, status, result, list, cancel).

Jobs are the app's background work, persisted in its jobs folder and resumed after its
restarts, so the CLI only submits, watches (a progress bar on stderr) and downloads. The app
is ``--server``, env ``COSYVOICE_SERVER``, default ``http://127.0.0.1:7860``. :func:`request`
and :func:`multipart` are the small HTTP client the commands (and tests) use.
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

from cosyvoice.cli.common import ServerError, UsageError, bar, write_output

DEFAULT_SERVER = "http://127.0.0.1:7860"
POLL_S = 1.0


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
        print(f"{bar(job['progress'])} {job['done']}/{job['total']} items  {job['state']}"
              f"  {job['audio_s']:.0f} s audio", end=end, file=sys.stderr, flush=True)
        if end == "\n":
            if job["error"]:
                print(job["error"], file=sys.stderr)
            return 0 if job["state"] == "done" else 1
        time.sleep(POLL_S)


def cmd_job_result(ns: argparse.Namespace) -> int:
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


