"""ChunkJoiner with sentences in pieces: the rule of its docstring, proven on signals built so
that every trim and hold-back matters — when a sentence's loudest frame is in the first piece
with a frame above the silence floor (or before it), its pieces give exactly the samples of
the sentence pushed whole; whole sentences are the one-piece case."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice.audio.join import SILENCE_DBFS, ChunkJoiner

SR = 24000


def _sentence(seed: int, loud_at: float = 0.3, seconds: float = 1.2) -> np.ndarray:
    """Leading and trailing silence (0.2 s, 0.25 s) around a voiced stretch whose loudest
    part is at ``loud_at`` seconds, with a faint noise floor everywhere."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    t = np.arange(n) / SR
    env = np.where((t > 0.2) & (t < seconds - 0.25), 0.2, 0.0)
    env = env + 0.6 * np.exp(-((t - loud_at) / 0.03) ** 2) * (env > 0)
    wav = env * np.sin(2 * np.pi * 180 * t) + 1e-4 * rng.standard_normal(n)
    return wav.astype(np.float32)


def _join(sentences: list[list[np.ndarray]], pauses=None, **joiner) -> list[np.ndarray]:
    """Every sentence pushed piece by piece; what each push returned."""
    joiner, out = ChunkJoiner(SR, **joiner), []
    for i, pieces in enumerate(sentences):
        last = i == len(sentences) - 1
        for j, piece in enumerate(pieces):
            out.append(joiner.push(piece, last=last, pause_s=(pauses or {}).get(i, 0.0),
                                   start=j == 0, end=j == len(pieces) - 1))
    return out


def _cut(wav: np.ndarray, bounds: list[int]) -> list[np.ndarray]:
    return np.split(wav, bounds)


@pytest.mark.parametrize("edges", [{}, {"edge_s": 0.005, "outer_s": 0.0, "fade_s": 0.05}])
@pytest.mark.parametrize("bounds", [
    [9000],                      # two pieces, the loudest frame (0.3 s) in the first
    [240 * 30, 240 * 60, 26000],  # on the frame grid, and off it
    [100, 5000, 5300, 5301, 6000],  # a piece of silence first, pieces shorter than the fade
    [3000, 4000, 4500, 9000, 28000],  # a silent first piece; an end piece of silence only
])
def test_pieces_give_the_whole_sentences_samples(bounds, edges):
    """Rule: loudest frame in (or before) the first piece above the silence floor → equal.
    Three sentences, the middle one (and the last) in pieces, with an inline pause; also
    with edges kept shorter than the cross-fade (a first piece then waits for the tail)."""
    a, b, c = _sentence(1), _sentence(2), _sentence(3, seconds=1.3)
    whole = np.concatenate(_join([[a], [b], [c]], pauses={0: 0.4}, **edges))
    pieces = np.concatenate(_join([[a], _cut(b, bounds), _cut(c, bounds)], pauses={0: 0.4},
                                  **edges))
    assert len(whole) > 2 * SR
    np.testing.assert_array_equal(pieces, whole)


def test_pieces_go_out_before_the_sentence_ends():
    """A middle piece's audio is returned at once (less the quiet end and the fade)."""
    a = _sentence(1, seconds=2.0)
    outs = _join([_cut(a, [12000, 24000, 36000])])
    assert [len(o) > 0 for o in outs] == [True, True, True, True]
    np.testing.assert_array_equal(np.concatenate(outs), np.concatenate(_join([[a]])))


def test_a_silent_first_piece_waits_for_speech():
    """Nothing goes out while the sentence is all silence (its leading trim is not known);
    then the trim is the whole sentence's."""
    a = _sentence(4)
    silent = a[:4000]  # 0.17 s of the noise floor
    assert 20 * np.log10(np.sqrt(np.mean(silent ** 2))) < SILENCE_DBFS
    outs = _join([_cut(a, [2000, 4000, 12000])])
    assert len(outs[0]) == len(outs[1]) == 0 and len(outs[2]) > 0
    np.testing.assert_array_equal(np.concatenate(outs), np.concatenate(_join([[a]])))


def test_a_louder_later_piece_breaks_the_rule_only_at_the_quiet_start():
    """Outside the rule (the loudest frame comes in a later piece) the leading trim was
    judged against the first piece's quieter peak: a quiet start stays, nothing is lost."""
    rng = np.random.default_rng(5)
    quiet = (0.004 * rng.standard_normal(SR // 2)).astype(np.float32)  # −48 dBFS hiss
    a = np.concatenate([quiet, _sentence(6, loud_at=0.5)])
    whole, pieces = np.concatenate(_join([[a]])), np.concatenate(_join([_cut(a, [SR // 2 + 2400])]))
    assert len(pieces) > len(whole)
    np.testing.assert_array_equal(pieces[len(pieces) - len(whole):], whole)
