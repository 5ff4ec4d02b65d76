"""Streaming below the sentence: a Kokoro voice's first sentence cut into pieces
(``latency_pieces``) and streamed as each is made, joined by the one ChunkJoiner."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from bench._metrics import longest_inner_silence
from cosyvoice.acoustic.kokoro import FIRST_PIECE, MIN_PIECE, latency_pieces
from tests.conftest import local_services, require_kokoro

# Kokoro's phonemes (misaki symbols) of two test sentences
LONG = ("hi fəɹɡˈɑt hɪz ʌmbɹˈɛlə, sˌO hi wˈATɪd ˌʌndəɹ ðɪ ˈOld stˈOn bɹˈɪʤ ʌntˈɪl ðə ɹˈAn "
        "fˈInəli stˈɑpt ænd ðə klˈWdz dɹˈɪftɪd əwˈA.")
NO_COMMA = ("ðə mjuzˈiəm ˈOpənd ə nˈu ɛksɪbˈɪʃən əbˌWt ˈAnʧənt sˈAlɪŋ ʃˈɪps ænd ðə kjˈu "
            "stɹˈɛʧt dˌWn ðə stɹˈit.")


@pytest.mark.parametrize("phonemes", [LONG, NO_COMMA, "həlˈO, hˌW ɑɹ ju tədˈA?"])
def test_pieces_rejoin_to_the_sentence(phonemes):
    pieces = latency_pieces(phonemes)
    assert " ".join(pieces) == phonemes
    assert len(pieces[0]) <= FIRST_PIECE and all(len(p) >= MIN_PIECE for p in pieces)
    for before, after in pairwise(pieces):  # each fits in what played before it
        assert len(after) <= 4.0 * len(before) * 1.25


def test_the_first_piece_ends_at_a_clause_or_a_phrase():
    assert latency_pieces(LONG)[0] == "hi fəɹɡˈɑt hɪz ʌmbɹˈɛlə,"  # after its comma
    # its first clause, however short, when the sentence has more than one
    assert latency_pieces("həlˈO, hˌW ɑɹ ju tədˈA?") == ["həlˈO,", "hˌW ɑɹ ju tədˈA?"]
    # no comma in reach: before a phrase's first word ("The museum opened | a new ...")
    first = latency_pieces(NO_COMMA)[0]
    assert first == "ðə mjuzˈiəm ˈOpənd" and len(first) <= FIRST_PIECE
    assert latency_pieces("ɡʊd mˈɔɹnɪŋ.") == ["ɡʊd mˈɔɹnɪŋ."]  # short, one clause: whole


def test_no_scrap_is_left_at_the_end():
    """A later piece takes the rest whole rather than leave a few symbols: cut at 96, the
    sentence above would end in a 5-symbol piece (əwˈA.)."""
    pieces = latency_pieces(LONG)
    assert len(pieces) == 2 and pieces[-1].endswith("dɹˈɪftɪd əwˈA.")


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    require_kokoro()
    return local_services(tmp_path_factory.mktemp("pieces")).synth


TEXT = ("He forgot his umbrella, so he waited under the old stone bridge until the rain "
        "finally stopped.")


@pytest.mark.slow
def test_a_streamed_first_sentence_comes_in_pieces(synth):
    from cosyvoice.pipeline import SynthesisRequest

    req = SynthesisRequest(text=TEXT, seed=1)  # the default voice: af_heart
    chunks = list(synth.stream(req))
    assert len(chunks) >= 2 and not chunks[0].final and chunks[-1].final
    assert {c.index for c in chunks} == {0}
    first = chunks[0].wav
    # the first piece is the first clause, "He forgot his umbrella," (~1.5 s)
    assert 0.8 < len(first) / synth.sample_rate < 2.2
    streamed = np.concatenate([c.wav for c in chunks])
    whole = synth.synthesize(req)
    assert whole.sentences == 1
    # one cut: about the same length as the sentence spoken whole (measured +0.46 s on a
    # 6.9 s sentence: the first clause ends as a clause does), no long silence at the cut
    assert abs(len(streamed) / synth.sample_rate - whole.duration_s) < 0.8
    assert longest_inner_silence(streamed, synth.sample_rate) < 0.4


@pytest.mark.slow
def test_an_instruction_keeps_the_sentence_whole(synth):
    """A style works on a sentence's whole audio: no cut then."""
    from cosyvoice.pipeline import SynthesisRequest

    req = SynthesisRequest(text=TEXT, mode="instruct", voice="af_heart",
                           instruction="speak slowly", seed=1)
    chunks = list(synth.stream(req))
    assert len(chunks) == 1 and chunks[0].final
