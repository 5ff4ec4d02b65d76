"""``python -m cosyvoice``: the command line run as a real subprocess with real models."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cosyvoice.voice.store import VoiceStore
from tests.conftest import ROOT


def cli(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "cosyvoice", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=environ)


@pytest.mark.parametrize("args", [(), ("synthesize",), ("voices",), ("voices", "list"),
                                  ("voices", "add"), ("voices", "rm"), ("voices", "rename"),
                                  ("voices", "fit"), ("voices", "export"), ("voices", "import")])
def test_help_everywhere(args, tmp_path):
    done = cli(*args, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m cosyvoice")
    if args == ("synthesize",):
        for flag in ("--text", "--file", "--mode", "--prompt", "--prompt-text", "--instruct",
                     "--voice", "--speed", "--seed", "--format", "--output"):
            assert flag in done.stdout


def test_usage_errors_exit_2_before_loading_models(tmp_path):
    both = cli("synthesize", "--text", "Hi.", "--file", "x.txt", "-o", "x.wav", cwd=tmp_path)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    no_file = cli("synthesize", "--file", "missing.txt", "-o", "x.wav", cwd=tmp_path)
    assert no_file.returncode == 2
    assert "error: --file missing.txt: no such file" in no_file.stderr
    no_prompt = cli("synthesize", "--text", "Hi.", "--prompt", "nope.wav", "-o", "x.wav",
                    cwd=tmp_path)
    assert no_prompt.returncode == 2 and "--prompt nope.wav: no such file" in no_prompt.stderr
    no_dir = cli("synthesize", "--text", "Hi.", "-o", "no/such/dir/x.wav", cwd=tmp_path)
    assert no_dir.returncode == 2 and "does not exist" in no_dir.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_synthesize_text_to_wav_with_progress_and_instruction(tmp_path):
    out = tmp_path / "hello.wav"
    done = cli("synthesize", "--text", "Hello from the command line. This is the second "
               "sentence.", "--seed", "7", "--instruct", "speak happily", "-o", str(out),
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    wav, sr = sf.read(out)
    info = sf.info(out)
    assert info.format == "WAV" and sr == 22050 and wav.ndim == 1
    assert 1.5 < len(wav) / sr < 15
    assert np.sqrt(np.mean(wav ** 2)) > 0.01  # speech, not silence
    assert re.search(r"^sentence 1/2 +[\d.]+ s$", done.stderr, re.M), done.stderr
    assert re.search(r"^sentence 2/2 +[\d.]+ s$", done.stderr, re.M)
    # the instruction reached the pipeline (its notes say what was understood)
    assert re.search(r"^note: .*happ", done.stderr, re.M), done.stderr
    m = re.search(r"^(\S+)\s+([\d.]+) s audio \(wav, 22050 Hz, 2 sentences\)\s+RTF ([\d.]+)",
                  done.stdout, re.M)
    assert m, done.stdout
    assert Path(m.group(1)) == out and abs(float(m.group(2)) - len(wav) / sr) < 0.01
    assert float(m.group(3)) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hello.wav"]  # nothing else left


@pytest.mark.slow
def test_text_errors_exit_2_with_the_message(tmp_path):
    empty = cli("synthesize", "-o", "x.wav", cwd=tmp_path, stdin="   \n")
    assert empty.returncode == 2
    assert empty.stderr.strip().splitlines()[-1] == "error: Please type some text to synthesize."
    fast = cli("synthesize", "--text", "Hi there.", "--speed", "5", "-o", "x.wav", cwd=tmp_path)
    assert fast.returncode == 2 and "speed is 5" in fast.stderr and "0.5 and 2.0" in fast.stderr
    assert not (tmp_path / "x.wav").exists()


@pytest.mark.slow
def test_bad_prompts_exit_2_with_the_message(tmp_path, real_male_prompt):
    junk = tmp_path / "junk.wav"
    junk.write_bytes(os.urandom(4000))
    done = cli("synthesize", "--text", "Hello.", "--prompt", str(junk), "-o", "x.wav",
               cwd=tmp_path)
    assert done.returncode == 2
    assert "error: could not read the prompt file" in done.stderr and "WAV" in done.stderr
    wav, sr = sf.read(real_male_prompt)
    short = tmp_path / "short.wav"
    sf.write(short, wav[: int(1.2 * sr)], sr)  # 1.2 s of real speech: too short to clone
    done = cli("synthesize", "--text", "Hello.", "--prompt", str(short), "-o", "x.wav",
               cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "3–30 s" in last, last
    assert "Traceback" not in done.stderr and not (tmp_path / "x.wav").exists()


@pytest.mark.slow
def test_a_prompt_of_two_voices_is_refused_by_synthesize_and_voices_add(
        tmp_path, real_female_prompt, real_male_prompt):
    """The command line validates prompts as the server does: half a woman, half a man
    (each about 3.5 s) is refused, naming their times."""
    import soxr

    female, sr = sf.read(real_female_prompt, dtype="float32")
    male, msr = sf.read(real_male_prompt, dtype="float32")
    two = tmp_path / "two.wav"
    sf.write(two, np.concatenate([female[:int(3.5 * sr)], np.zeros(int(0.3 * sr), np.float32),
                                  soxr.resample(male, msr, sr)]), sr)
    for args in (("synthesize", "--text", "Hello.", "--prompt", str(two), "-o", "x.wav"),
                 ("voices", "add", "Two people", str(two))):
        done = cli(*args, cwd=tmp_path, env={"COSYVOICE_VOICES_DIR": str(tmp_path / "v")})
        assert done.returncode == 2, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert "more than one voice" in last and "sounds like a different speaker" in last
    assert not (tmp_path / "x.wav").exists() and not list(tmp_path.glob("v/*"))


@pytest.mark.slow
def test_voices_add_list_speak_rename_rm(tmp_path, real_female_prompt):
    voices = tmp_path / "voices"
    env = {"COSYVOICE_VOICES_DIR": str(voices)}  # env for some calls, --voices-dir for others
    added = cli("voices", "add", "Cate B", str(real_female_prompt), "--text", "a transcript",
                cwd=tmp_path, env=env)
    assert added.returncode == 0, added.stderr
    assert "saved voice 'Cate B'" in added.stdout

    listed = cli("voices", "--voices-dir", str(voices), "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    by_name = {v["name"]: v for v in json.loads(listed.stdout)["voices"]}
    from cosyvoice.engine.offline import PRESET_VOICES  # joe, baker + installed Kokoro voices

    assert set(by_name) == {*PRESET_VOICES, "Cate B"}
    assert by_name["Cate B"]["transcript"] == "a transcript"
    assert 150 < by_name["Cate B"]["f0_median_hz"] < 260  # a female voice

    out = tmp_path / "saved.flac"  # text on stdin, format from the suffix
    spoken = cli("synthesize", "--voice", "cate b", "-o", str(out), cwd=tmp_path, env=env,
                 stdin="Spoken in a saved voice, read from standard input.")
    assert spoken.returncode == 0, spoken.stderr
    assert sf.info(out).format == "FLAC" and sf.info(out).duration > 1.0

    renamed = cli("voices", "rename", "Cate B", "Cate 2", cwd=tmp_path, env=env)
    assert renamed.returncode == 0 and "'Cate 2'" in renamed.stdout, renamed.stderr
    table = cli("voices", "list", "--voices-dir", str(voices), cwd=tmp_path).stdout
    assert re.search(r"^Cate 2\s+saved\s+F0 \d+ Hz", table, re.M) and "Cate B" not in table
    builtin = cli("voices", "rm", "joe", cwd=tmp_path, env=env)
    assert builtin.returncode == 2 and "built-in voice" in builtin.stderr
    assert cli("voices", "rm", "cate 2", cwd=tmp_path, env=env).returncode == 0
    gone = cli("voices", "rm", "Cate 2", cwd=tmp_path, env=env)
    assert gone.returncode == 2 and "no saved voice is called 'Cate 2'" in gone.stderr
    assert [d.name for d in voices.iterdir() if not d.name.startswith(".")] == []


@pytest.mark.slow
def test_voices_fit_export_import_and_speak(tmp_path, real_female_prompt):
    """``voices fit`` in process with a progress bar (a tiny search: 2 candidates, a 5 s
    budget, so one generation), the voice listed as fitted, spoken, exported to one file
    and imported into another voices folder, where it speaks the same."""
    voices, other = tmp_path / "voices", tmp_path / "other"
    env = {"COSYVOICE_VOICES_DIR": str(voices), "COSYVOICE_FIT_POPSIZE": "2"}
    done = cli("voices", "fit", "Cate F", str(real_female_prompt), "--budget", "5",
               "--samples", str(tmp_path / "samples"), cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "saved fitted voice 'Cate F'" in done.stdout and "GE2E" in done.stdout
    assert re.search(r"\[#+\] 100% .*generation 1", done.stderr), done.stderr[-500:]
    assert {p.name for p in (tmp_path / "samples").iterdir()} == {"before.wav", "after.wav"}
    table = cli("voices", "list", cwd=tmp_path, env=env).stdout
    assert re.search(r"^Cate F\s+fitted\s+prompt F0 \d+", table, re.M), table
    again = cli("voices", "fit", "cate f", str(real_female_prompt), cwd=tmp_path, env=env)
    assert again.returncode == 2 and "already saved" in again.stderr

    exported = cli("voices", "export", "Cate F", "-o", str(tmp_path / "cate.cvvoice"),
                   cwd=tmp_path, env=env)
    assert exported.returncode == 0, exported.stderr
    imported = cli("voices", "import", str(tmp_path / "cate.cvvoice"), "--voices-dir",
                   str(other), cwd=tmp_path)
    assert imported.returncode == 0 and "imported fitted voice 'Cate F'" in imported.stdout
    # the same pack and provenance in both folders (created: when imported); spoken from
    # the imported one
    mine, theirs = VoiceStore(voices).get("Cate F"), VoiceStore(other).get("Cate F")
    assert np.array_equal(mine.pack(), theirs.pack())
    assert {**mine.summary(), "created": 0} == {**theirs.summary(), "created": 0}
    out = tmp_path / "imported.wav"
    spoken = cli("synthesize", "--voice", "Cate F", "--text", "The fitted voice speaks.",
                 "-o", str(out), "--voices-dir", str(other), cwd=tmp_path)
    assert spoken.returncode == 0, spoken.stderr
    assert len(sf.read(out)[0]) > 22050
    bad = tmp_path / "bad.cvvoice"
    bad.write_bytes(b"not a voice file")
    refused = cli("voices", "import", str(bad), "--voices-dir", str(other), cwd=tmp_path)
    assert refused.returncode == 2 and "not a voice file" in refused.stderr


@pytest.mark.slow
def test_synthesize_with_the_cosyvoice_engine(tmp_path, cv_folder_v3, real_female_prompt):
    """``--engine cosyvoice3 --model-dir DIR``: the folder's modes on the command line (the
    clone transcript required, with the message), audio at the engine's 24 kHz."""
    engine = ("--engine", "cosyvoice3", "--model-dir", str(cv_folder_v3))
    out = tmp_path / "clone.wav"
    no_transcript = cli("synthesize", *engine, "--text", "Hello.", "--mode", "clone",
                        "--prompt", str(real_female_prompt), "-o", str(out), cwd=tmp_path)
    assert no_transcript.returncode == 2, no_transcript.stderr
    assert "needs the prompt's transcript" in no_transcript.stderr and not out.exists()
    done = cli("synthesize", *engine, "--text", "你好。Hello from the command line.",
               "--mode", "clone", "--prompt", str(real_female_prompt), "--prompt-text",
               "a line read for the prompt", "--seed", "5", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    wav, sr = sf.read(out, dtype="float32")
    assert sr == 24000 and len(wav) > 0.04 * sr and float(np.abs(wav).max()) > 0.01
    assert re.search(r"\(wav, 24000 Hz, 2 sentences\)", done.stdout), done.stdout
    preset = cli("synthesize", *engine, "--text", "Hi.", "--voice", "tiny-male",
                 "-o", str(tmp_path / "preset.wav"), cwd=tmp_path)
    assert preset.returncode == 0, preset.stderr
    assert sf.info(tmp_path / "preset.wav").samplerate == 24000
