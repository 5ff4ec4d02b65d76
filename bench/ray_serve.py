"""The app on Ray Serve under load: throughput with 1 and 2 synthesis replicas, a replica
killed with SIGKILL mid-load (failed requests after one retry, time back to full
strength), and a rolling model reload (a new ``user_config.reload`` deployed) under load.

    PYTHONPATH=. .venv-ray/bin/python -m bench.ray_serve [--seconds 40] [--clients 4]

Starts its own local cluster (``ray start --head --num-cpus 2``) and deploys
deploy/ray/serve.yaml with ``serve deploy`` (the production path), changing only
``replicas`` and ``user_config.reload`` between phases; stops the cluster at the end.
Needs Ray (requirements-ray.txt). Prints one JSON line per phase.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
URL = "http://127.0.0.1:8000"
DASHBOARD = "http://127.0.0.1:8265"
TEXTS = ["The quick brown fox jumps over the lazy dog.",
         "Ray Serve spreads these requests over the synthesis replicas.",
         "Each replica holds its own models and answers on its own."]
RETRYABLE = {429, 502, 503, 504}
TOKEN: list[str] = []  # Ray's auth token, read once


@dataclass
class Tally:
    """Requests of one phase: (end time, status after the retry, replica, audio seconds)."""

    rows: list[tuple[float, int, str, float]] = field(default_factory=list)
    retried: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, status: int, replica: str, audio_s: float, retried: bool) -> None:
        with self.lock:
            self.rows.append((time.time(), status, replica, audio_s))
            self.retried += retried


def one_request(http: httpx.Client, text: str) -> tuple[int, str, float]:
    try:
        r = http.post(URL + "/api/v1/tts", json={"text": text, "voice": "joe"})
    except httpx.HTTPError:
        return 599, "", 0.0  # connection lost: retryable
    return (r.status_code, r.headers.get("x-cosyvoice-replica", ""),
            float(r.headers.get("x-audio-duration", 0) or 0))


def client(stop: threading.Event, tally: Tally, seed: int) -> None:
    """Sends requests back to back until ``stop``; one retry on a retryable answer."""
    with httpx.Client(timeout=120) as http:
        i = seed
        while not stop.is_set():
            text = TEXTS[i % len(TEXTS)]
            status, replica, audio = one_request(http, text)
            retried = status in RETRYABLE or status == 599
            if retried:
                time.sleep(0.5)
                status, replica, audio = one_request(http, text)
            tally.add(status, replica, audio, retried)
            i += 1


def load(seconds: float, clients: int, during=None) -> tuple[Tally, float, dict]:
    """``clients`` clients for ``seconds``; ``during()`` runs meanwhile (its result is
    returned). Returns the tally, the wall time and ``during``'s result."""
    stop, tally = threading.Event(), Tally()
    threads = [threading.Thread(target=client, args=(stop, tally, k)) for k in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    extra = during() if during else {}
    time.sleep(max(0.0, seconds - (time.time() - t0)))
    stop.set()
    for t in threads:
        t.join()
    return tally, time.time() - t0, extra


def summary(name: str, tally: Tally, wall: float, **extra) -> dict:
    statuses = Counter(s for _, s, _, _ in tally.rows)
    ok = [r for r in tally.rows if r[1] == 200]
    out = {"phase": name, "requests": len(tally.rows), "ok": len(ok),
           "failed": len(tally.rows) - len(ok), "statuses": dict(statuses),
           "retried": tally.retried, "wall_s": round(wall, 1),
           "req_per_s": round(len(ok) / wall, 3),
           "audio_s_per_s": round(sum(r[3] for r in ok) / wall, 3),
           "per_replica": dict(Counter(r[2] for r in ok)), **extra}
    print(json.dumps(out), flush=True)
    return out


# ---- cluster and deployment -------------------------------------------------------------
# Ray's token authentication on (the token in ~/.ray/auth_token, made if missing): the CLI
# and the dashboard's REST API need it.
RAY_ENV = {"PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}


def run(*cmd: str, check: bool = True) -> str:
    env = {**os.environ, **RAY_ENV}
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr[-2000:]}")
    return p.stdout


def deploy(workdir: Path, replicas: int, reload: int) -> None:
    config = yaml.safe_load((ROOT / "deploy/ray/serve.yaml").read_text())
    app = config["applications"][0]
    app["args"]["replicas"] = replicas
    app["args"]["app_args"] += (f" --outputs-dir {workdir}/outputs --cache-dir {workdir}/cache"
                                f" --log-dir {workdir}/logs --pidfile {workdir}/run/app.pid"
                                " --admin-token bench")
    app["deployments"][0]["user_config"]["reload"] = reload
    path = workdir / f"serve-{replicas}-{reload}.yaml"
    path.write_text(yaml.safe_dump(config))
    run(str(BIN / "serve"), "deploy", str(path))


def synthesis_replicas() -> dict[str, int]:
    """The Synthesis deployment's replica states (Serve's REST API)."""
    token = run(str(BIN / "ray"), "get-auth-token").strip() if not TOKEN else TOKEN[0]
    TOKEN[:] = [token]
    try:
        apps = httpx.get(DASHBOARD + "/api/serve/applications/", timeout=10,
                         headers={"Authorization": f"Bearer {token}"}).json()
        dep = apps["applications"]["cosyvoice"]["deployments"]["Synthesis"]
    except (httpx.HTTPError, KeyError, ValueError):
        return {}
    return dict(Counter(r["state"] for r in dep.get("replicas", [])))


def wait_running(n: int, timeout: float = 600) -> float:
    t0 = time.time()
    while time.time() - t0 < timeout:
        states = synthesis_replicas()
        if states.get("RUNNING", 0) == n and sum(states.values()) == n:
            return time.time() - t0
        time.sleep(0.5)
    raise RuntimeError(f"Synthesis not at {n} RUNNING replicas after {timeout} s: "
                       f"{synthesis_replicas()}")


def replica_pids() -> dict[str, int]:
    r = httpx.get(URL + "/admin/models", timeout=60).json()
    return {rep["replica"]: rep["pid"] for rep in r["replicas"]}


def replica_cpu_s() -> float:
    """CPU seconds (user + system) the synthesis replicas' processes have used so far."""
    total = 0.0
    for pid in replica_pids().values():
        fields_ = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")
    return total


def throughput(name: str, seconds: float, clients: int) -> dict:
    """Requests per second and audio seconds per second; the replicas' CPU seconds per
    request (less noisy than wall time on a shared machine)."""
    cpu0 = replica_cpu_s()
    tally, wall, _ = load(seconds, clients)
    cpu = replica_cpu_s() - cpu0
    ok = sum(1 for r in tally.rows if r[1] == 200)
    return summary(name, tally, wall, replica_cpu_s=round(cpu, 1),
                   replica_cpu_s_per_request=round(cpu / max(ok, 1), 3))


# ---- phases -------------------------------------------------------------------------------
def fault(seconds: float, clients: int) -> dict:
    pids = replica_pids()

    def kill() -> dict:
        time.sleep(seconds / 4)
        victim, pid = sorted(pids.items())[0]
        os.kill(pid, signal.SIGKILL)
        t_kill = time.time()
        while True:  # back to two RUNNING replicas, one of them new
            states = synthesis_replicas()
            if states.get("RUNNING", 0) == 2 and sum(states.values()) == 2:
                try:
                    now = replica_pids()
                except (httpx.HTTPError, ValueError, KeyError):
                    now = {}
                if len(now) == 2 and victim not in now:
                    return {"killed": victim, "full_strength_s": round(time.time() - t_kill, 1)}
            time.sleep(0.5)

    tally, wall, extra = load(seconds, clients, during=kill)
    return summary("fault: kill -9 one replica", tally, wall, **extra)


def rolling_reload(workdir: Path, seconds: float, clients: int) -> dict:
    def reload() -> dict:
        time.sleep(seconds / 5)
        t0 = time.time()
        deploy(workdir, 2, reload=1)
        time.sleep(2)
        wait_running(2)
        return {"reload_applied_s": round(time.time() - t0, 1)}

    tally, wall, extra = load(seconds, clients, during=reload)
    return summary("rolling reload (user_config.reload 0 -> 1)", tally, wall, **extra)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=40.0, help="length of each load phase")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local cluster")
    ap.add_argument("--throughput-only", action="store_true", help="skip the fault and "
                    "reload phases")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    run(str(BIN / "ray"), "get-auth-token", "--generate")
    run(str(BIN / "ray"), "start", "--head", "--num-cpus", str(args.cpus),
        "--disable-usage-stats")
    cpu0 = os.times()
    try:
        t0 = time.time()
        deploy(workdir, 1, reload=0)
        print(json.dumps({"phase": "deploy, 1 replica", "ready_s": round(wait_running(1)
                                                                          + time.time() - t0, 1)}))
        load(5, 1)  # warm-up
        throughput("throughput, 1 replica", args.seconds, args.clients)
        t0 = time.time()
        deploy(workdir, 2, reload=0)
        wait_running(2)
        print(json.dumps({"phase": "scale 1 -> 2 replicas", "ready_s": round(time.time() - t0, 1)}))
        throughput("throughput, 2 replicas", args.seconds, args.clients)
        if not args.throughput_only:
            fault(args.seconds, args.clients)
            rolling_reload(workdir, args.seconds, args.clients)
    finally:
        run(str(BIN / "serve"), "shutdown", "-y", check=False)
        run(str(BIN / "ray"), "stop", check=False)
        cpu = os.times()
        print(json.dumps({"bench_client_cpu_s": round(cpu.user + cpu.system
                                                      - cpu0.user - cpu0.system, 1),
                          "loadavg": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
