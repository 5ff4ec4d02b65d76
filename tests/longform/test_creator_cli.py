"""``python -m cosyvoice dialogue`` (in-process) and ``job`` (against a running app), run as
real subprocesses."""

from __future__ import annotations

import zipfile

import pytest
import soundfile as sf

from tests.test_cli import cli

pytestmark = pytest.mark.slow


def test_dialogue_command_writes_audio_subtitles_and_the_table(tmp_path):
    script = tmp_path / "talk.txt"
    script.write_text("[joe] Hello there.\n[af_heart|happy] Hi, Joe!\n", encoding="utf-8")
    done = cli("dialogue", str(script), "-o", "talk.flac", "--srt", "talk.srt",
               "--gap", "0.1", "--speaker-gap", "0.4", "--voices-dir", str(tmp_path / "v"),
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "line 1/2 (joe)" in done.stderr and "line 2/2 (af_heart)" in done.stderr
    rows = [ln.split() for ln in done.stdout.splitlines()[1:3]]
    assert [(r[0], r[1]) for r in rows] == [("1", "joe"), ("2", "af_heart")]
    wav, sr = sf.read(tmp_path / "talk.flac")
    assert len(wav) / sr == pytest.approx(float(rows[0][2]) + float(rows[1][2]) + 0.4,
                                          abs=0.01)
    assert (tmp_path / "talk.srt").read_text().count(" --> ") == 2
    # Only what was asked for: the per-line files went to a scratch folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["talk.flac", "talk.srt", "talk.txt"]


def test_dialogue_command_bad_line_exits_2(tmp_path):
    script = tmp_path / "bad.txt"
    script.write_text("[joe] Fine.\n[ghost] Boo.\n", encoding="utf-8")
    done = cli("dialogue", str(script), "-o", "x.wav", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: line 2: unknown voice 'ghost'")
    assert not (tmp_path / "x.wav").exists()


def test_job_commands_against_the_app(running_app, tmp_path):
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"text": "First line.", "voice": "joe"}\n'
                     '{"text": "Second line.", "filename": "two"}\n', encoding="utf-8")
    server = ("job", "--server", running_app.url)
    done = cli(*server, "submit", str(lines), "--voice", "af_heart", "--wait", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    assert "2/2 items  done" in done.stderr and "100%" in done.stderr
    got = cli(*server, "result", job_id, "-o", "out.zip", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    with zipfile.ZipFile(tmp_path / "out.zip") as z:
        assert {"items/0001.wav", "items/two.wav", "joined.wav"} <= set(z.namelist())
    assert job_id in cli(*server, "list", cwd=tmp_path).stdout
    missing = cli(*server, "status", "no-such-job", cwd=tmp_path)
    assert missing.returncode == 2 and "no batch job 'no-such-job'" in missing.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("text,voice\nOk.,joe\n,joe\n", encoding="utf-8")
    refused = cli(*server, "submit", str(bad), cwd=tmp_path)
    assert refused.returncode == 2 and "row 3: the text is empty" in refused.stderr
    down = cli("job", "--server", "http://127.0.0.1:9", "list", cwd=tmp_path)
    assert down.returncode == 1 and "cannot reach the app" in down.stderr
