"""Sentence cues and pronunciation overrides through the real offline engine."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from cosyvoice.frontend.pronunciation import parse_reading
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from tests.conftest import local_services

pytestmark = pytest.mark.slow


# The boundary measure of the retired bench/subtitles.py (findings: bench/README.md,
# "subtitle accuracy"): each boundary between two cues against the silence the audio has there.
def silences(wav: np.ndarray, sr: int, floor_db: float = -40.0,
             min_s: float = 0.04) -> list[tuple[float, float]]:
    """Silent stretches ``(start_s, end_s)``: 20 ms RMS windows every 5 ms, quieter than
    ``floor_db`` under the output's peak window, lasting at least ``min_s``."""
    hop, win = int(0.005 * sr), int(0.02 * sr)
    n = max(0, (len(wav) - win) // hop + 1)
    frames = np.stack([wav[i * hop: i * hop + win] for i in range(n)])
    rms = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1) + 1e-12)
    quiet = 20 * np.log10(rms / rms.max()) < floor_db
    out, start = [], None
    for i, q in enumerate([*quiet, False]):
        if q and start is None:
            start = i
        elif not q and start is not None:
            a, b = start * hop + win / 2, (i - 1) * hop + win / 2  # window centres
            if (b - a) / sr >= min_s:
                out.append((a / sr, b / sr))
            start = None
    return out


def boundary_errors(cues, wav: np.ndarray, sr: int) -> list[float]:
    """Per boundary between consecutive cues: |end − silence start| and |start − silence
    end| for the silence matching the cues' gap (seconds)."""
    gaps = silences(wav, sr)
    errors = []
    for a, b in pairwise(cues):
        lo, hi = a.end_s, b.start_s

        def overlap(g, lo=lo, hi=hi):
            return min(g[1], hi) - max(g[0], lo)

        def distance(g, lo=lo, hi=hi):
            return abs((g[0] + g[1]) / 2 - (lo + hi) / 2)

        best = max(gaps, key=lambda g: (overlap(g) > 0, overlap(g), -distance(g)))
        errors += [abs(lo - best[0]), abs(hi - best[1])]
    return errors


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Synthesizer:
    return local_services(tmp_path_factory.mktemp("timings"), clone_space=False).synth


@pytest.mark.parametrize("text, voice", [
    ("The train left at noon. It was raining hard. [pause:600ms] Nobody had an umbrella.",
     "joe"),
    ("今天早上下了一场大雨。路上的行人都很匆忙。我在车站等了很久。", "baker"),
])
def test_sentence_cues_match_the_silences_in_the_audio(synth, text, voice):
    result = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
    cues = result.cues
    assert len(cues) == result.sentences == 3
    assert all(a.end_s <= b.start_s for a, b in pairwise(cues))
    assert cues[-1].end_s <= result.duration_s
    assert max(boundary_errors(cues, result.wav, result.sample_rate)) <= 0.08
    srt = result.path.with_suffix(".srt").read_text("utf-8")
    assert cues[1].text in srt and result.path.with_suffix(".vtt").is_file()


def test_an_english_name_is_read_from_its_arpabet(synth):
    piper = synth.manager.get("acoustic_en")
    reading = {"nguyen": parse_reading("Nguyen", "W IH1 N")}
    [phones] = piper.phonemes_with("Ask Nguyen today.", reading)
    assert "".join(phones).split(" ")[1] == "wˈɪn"
    ids = piper._voice.phonemes_to_ids(phones)
    plain = piper._voice.phonemes_to_ids(piper.phonemize("Ask Nguyen today.")[0])
    assert ids != plain


def test_the_lexicon_changes_what_the_engine_speaks(synth):
    req = SynthesisRequest(text="朝阳公园很大。", voice="baker", seed=1)
    before = synth.synthesize(req)
    synth.lexicon.put("朝阳", "chao2 yang2")
    try:
        after = synth.synthesize(req)
        inline = synth.synthesize(SynthesisRequest(text="{朝阳|chao2 yang2}公园很大。",
                                                   voice="baker", seed=1))
    finally:
        synth.lexicon.delete("朝阳")
    assert len(before.wav) != len(after.wav) or not np.allclose(before.wav, after.wav)
    np.testing.assert_array_equal(after.wav, inline.wav)  # the lexicon = the inline form


def test_mandarin_syllable_cues_follow_fastspeech2_durations(synth):
    result = synth.synthesize(SynthesisRequest(
        text="今天天气很好。[pause:500ms] 我用iPhone打电话。", voice="baker", seed=1))
    words, cues = result.word_cues, result.cues
    assert "".join(w.text for w in words) == "今天天气很好我用打电话"
    assert all(a.start_s <= a.end_s <= b.start_s for a, b in pairwise(words))
    # each sentence's first syllable starts where its speech starts, the last ends inside it
    assert abs(words[0].start_s - cues[0].start_s) < 0.04
    assert abs(words[6].start_s - cues[1].start_s) < 0.04
    assert words[5].end_s <= cues[0].end_s and words[-1].end_s <= cues[1].end_s
    # the English run between 用 and 打 (spoken by joe) moves the syllables after it
    assert words[8].start_s - words[7].end_s > 0.3
