"""Nightly cron line: install/remove are idempotent and leave other lines untouched.

Never the real user's crontab: a temporary file, or (for run.sh) a stand-in ``crontab``
command that keeps the table in a temporary file, selected with CRONTAB_CMD.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from cosyvoice.lifecycle import cron
from tests.conftest import ROOT

OTHER = ["# my own jobs", "MAILTO=me@example.org", "*/5 * * * * /usr/bin/backup --quiet",
         "", "@reboot /home/me/start-something.sh  # keep me"]


@pytest.fixture
def tab(tmp_path):
    path = tmp_path / "crontab"
    path.write_text("\n".join(OTHER) + "\n")
    return cron.Crontab(file=path)


def test_install_twice_adds_one_line_and_keeps_others(tab):
    line = cron.cron_line("03:00", env={})
    assert cron.install(tab, line) is True
    assert cron.install(tab, line) is False
    lines = tab.read().splitlines()
    assert lines[: len(OTHER)] == OTHER
    mine = [ln for ln in lines if cron.marker() in ln]
    assert mine == [line]
    assert line.startswith("0 3 * * * cd ") and f"bash {ROOT / 'restart.sh'}" in line
    assert "--reason cron" in line and ">> " in line


def test_new_time_replaces_the_line(tab):
    cron.install(tab, cron.cron_line("03:00", env={}))
    cron.install(tab, cron.cron_line("4:30", env={}, keep_outputs=True))
    mine = [ln for ln in tab.read().splitlines() if cron.marker() in ln]
    assert len(mine) == 1 and mine[0].startswith("30 4 * * * ") and "--keep-outputs" in mine[0]


def test_remove_is_idempotent_and_restores_the_original(tab):
    before = tab.read()
    cron.install(tab, cron.cron_line(env={}))
    assert cron.remove(tab) is True
    assert cron.remove(tab) is False
    assert tab.read() == before


def test_another_install_line_is_not_touched(tab, tmp_path):
    other_root = tmp_path / "second-install"
    theirs = cron.cron_line("02:00", root=other_root, env={})
    cron.install(tab, theirs, root=other_root)
    cron.install(tab, cron.cron_line(env={}))
    cron.remove(tab)
    assert theirs in tab.read().splitlines()


def test_env_is_carried_and_percent_escaped():
    line = cron.cron_line(env={"COSYVOICE_PORT": "7861", "HOME": "/x",
                               "COSYVOICE_OUTPUTS_DIR": "/data/out%d"})
    assert "COSYVOICE_PORT=7861" in line and "HOME=" not in line
    assert r"/data/out\%d" in line and "out%d" not in line.replace(r"\%", "")


@pytest.mark.parametrize("bad", ["3", "24:00", "03:60", "noon", ""])
def test_bad_time_is_rejected(bad):
    with pytest.raises(ValueError, match="HH:MM"):
        cron.cron_line(bad, env={})


def _fake_crontab(tmp_path):
    """A stand-in for the `crontab` binary (absent here) with its table in a temp file."""
    table = tmp_path / "table"
    table.write_text("\n".join(OTHER) + "\n")
    script = tmp_path / "crontab"
    script.write_text(f"""#!/bin/sh
case "$1" in
  -l) cat "{table}" ;;
  -) cat > "{table}" ;;
  *) echo "usage" >&2; exit 2 ;;
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, table


def _run_sh(*args, env):
    return subprocess.run(["bash", str(ROOT / "run.sh"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_run_sh_install_and_remove_cron(tmp_path):
    script, table = _fake_crontab(tmp_path)
    env = {**os.environ, "CRONTAB_CMD": str(script), "COSYVOICE_PORT": "7999"}
    for _ in range(2):
        done = _run_sh("--install-cron", "04:15", env=env)
        assert done.returncode == 0, done.stderr
    lines = table.read_text().splitlines()
    mine = [ln for ln in lines if cron.marker() in ln]
    assert len(mine) == 1 and mine[0].startswith("15 4 * * * ")
    assert "COSYVOICE_PORT=7999" in mine[0]
    assert lines[: len(OTHER)] == OTHER
    assert _run_sh("--remove-cron", env=env).returncode == 0
    assert table.read_text().splitlines() == OTHER


def test_cli_reports_missing_crontab_command(tmp_path):
    env = {**os.environ, "CRONTAB_CMD": str(tmp_path / "no-such-crontab")}
    done = subprocess.run([sys.executable, "-m", "cosyvoice.lifecycle.cron", "install"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "not found" in done.stderr
