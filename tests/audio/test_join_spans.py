"""ChunkJoiner's spans: where each sentence's speech lands in the joined output."""

import numpy as np
import pytest

from cosyvoice.audio.join import ChunkJoiner, join_runs, speech_bounds

SR = 8000


def sentence(speech_s: float, lead_s: float = 0.3, tail_s: float = 0.25) -> np.ndarray:
    t = np.arange(int(speech_s * SR)) / SR
    tone = (0.4 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    return np.concatenate([np.zeros(int(lead_s * SR), np.float32), tone,
                           np.zeros(int(tail_s * SR), np.float32)])


def loud_runs(wav: np.ndarray) -> list[tuple[int, int]]:
    loud = np.flatnonzero(np.abs(wav) > 1e-3)
    cuts = np.flatnonzero(np.diff(loud) > 0.02 * SR)  # gaps, not zero crossings
    return list(zip(loud[np.r_[0, cuts + 1]], loud[np.r_[cuts, len(loud) - 1]] + 1, strict=True))


@pytest.mark.parametrize("pauses", [(0.0, 0.0, 0.0), (0.8, 0.0, 0.0), (0.0, 1.2, 0.0)])
def test_spans_are_the_speech_in_the_joined_output(pauses):
    joiner = ChunkJoiner(SR)
    lengths = (0.7, 0.4, 1.1)
    out = np.concatenate([joiner.push(sentence(s), last=i == 2, pause_s=p)
                          for i, (s, p) in enumerate(zip(lengths, pauses, strict=True))])
    assert joiner.emitted == len(out)
    measured = loud_runs(out)
    assert len(measured) == 3
    for (start, end), (a, b), s in zip(joiner.spans, measured, lengths, strict=True):
        assert abs(start - a) <= 0.011 * SR and abs(end - b) <= 0.011 * SR  # one frame
        assert (end - start) / SR == pytest.approx(s, abs=0.011)


def test_speech_bounds_of_silence_is_the_whole_clip():
    assert speech_bounds(np.zeros(800, np.float32), SR) == (0, 800)


def test_join_runs_origins_place_each_run():
    pieces = [sentence(0.5, lead_s=0.2), sentence(0.3, lead_s=0.4)]
    origins: list[int] = []
    out = join_runs(pieces, SR, origins=origins)
    runs = loud_runs(out)
    # each run's tone starts at its lead in its own audio: origin + lead = where it is heard
    assert [abs(o + int(lead * SR) - a) <= 1 for o, lead, (a, _) in
            zip(origins, (0.2, 0.4), runs, strict=True)] == [True, True]


def test_joiner_origins_place_each_chunk():
    joiner = ChunkJoiner(SR)
    out = np.concatenate([joiner.push(sentence(0.5, lead_s=0.3)),
                          joiner.push(sentence(0.4, lead_s=0.45), last=True)])
    runs = loud_runs(out)
    assert abs(joiner.origins[0] + int(0.3 * SR) - runs[0][0]) <= 1
    assert abs(joiner.origins[1] + int(0.45 * SR) - runs[1][0]) <= 1


def test_spans_of_a_sentence_in_pieces_equal_the_whole_sentence():
    sentences = [sentence(0.7), sentence(0.4), sentence(1.1)]
    whole = ChunkJoiner(SR)
    out_whole = np.concatenate([whole.push(s, last=i == 2) for i, s in enumerate(sentences)])
    pieces = ChunkJoiner(SR)
    out = []
    for i, s in enumerate(sentences):
        cuts = np.array_split(s, 5)  # the first piece is silence: the trim waits
        for j, piece in enumerate(cuts):
            out.append(pieces.push(piece, last=i == 2, start=j == 0, end=j == len(cuts) - 1))
    np.testing.assert_array_equal(np.concatenate(out), out_whole)
    assert pieces.spans == whole.spans and pieces.origins == whole.origins
    assert pieces.emitted == whole.emitted == len(out_whole)
