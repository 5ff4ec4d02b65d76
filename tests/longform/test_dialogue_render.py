"""A dialogue rendered by the real offline engine: three voices, one file whose length is
the lines' lengths plus the gaps, one cue per line; a bad line refused before any line is
synthesized."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
import soundfile as sf

from cosyvoice.errors import TextError
from cosyvoice.longform.dialogue import parse_script, render_dialogue
from cosyvoice.subtitles import to_srt
from tests.conftest import local_services

pytestmark = pytest.mark.slow

SCRIPT = ("[joe] Good morning, everyone.\n"
          "[af_heart|happy] Morning! Lovely weather today.\n"
          "Isn't it?\n"
          "[zf_xiaoxiao] 早上好。\n")


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return local_services(tmp_path_factory.mktemp("dialogue"), clone_space=False).synth


def finished(synth) -> int:
    return sum(n for (_, outcome), n in synth.tracker.snapshot().outcomes.items()
               if outcome == "ok")


def test_three_voices_lengths_and_gaps_add_up(synth):
    lines = parse_script(SCRIPT, 50, 5000)
    seen = []
    result = render_dialogue(synth, lines, gap_s=0.2, speaker_gap_s=0.7, seed=3,
                             progress=lambda i, n, what: seen.append((i, n)))
    assert [r["voice"] for r in result.rows] == ["joe", "af_heart", "af_heart", "zf_xiaoxiao"]
    assert [r["line"] for r in result.rows] == [1, 2, 3, 4]
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    sr = result.sample_rate
    gaps = [round(0.7 * sr), round(0.2 * sr), round(0.7 * sr)]  # speaker, same, speaker
    line_samples = [round(r["seconds"] * sr) for r in result.rows]
    assert all(n > 0.3 * sr for n in line_samples)
    # The file holds exactly the lines and the gaps (seconds are rounded to 1 ms).
    assert abs(len(result.wav) - (sum(line_samples) + sum(gaps))) <= len(line_samples)
    on_disk, file_sr = sf.read(result.path)
    assert file_sr == sr and len(on_disk) == len(result.wav)
    # The gaps are silence, and each cue covers its line exactly.
    for cue, nxt in pairwise(result.cues):
        gap = result.wav[round(cue.end_s * sr): round(nxt.start_s * sr)]
        assert len(gap) and np.abs(gap).max() == 0.0
    assert result.cues[-1].end_s == pytest.approx(len(result.wav) / sr, abs=1e-6)
    assert "af_heart: Isn't it?" in to_srt(result.cues)
    assert "instruction understood" in result.rows[1]["notes"]


def test_a_bad_line_is_refused_before_any_synthesis(synth):
    before = finished(synth)
    lines = parse_script("[joe] Fine.\n[af_heart] Also fine.\n[nobody] Not fine.", 50, 5000)
    with pytest.raises(TextError, match=r"^line 3: unknown voice 'nobody'"):
        render_dialogue(synth, lines)
    lines = parse_script("[joe] Fine.\n[joe] " + "x" * 1200, 50, 5000)
    with pytest.raises(TextError, match=r"^line 2: Text is 1,200 characters; the limit is 1,000"):
        render_dialogue(synth, lines)
    assert finished(synth) == before
