"""SRT and WebVTT writing of timed cues."""

import pytest

from cosyvoice.subtitles import Cue, shifted, to_srt, to_vtt

CUES = [Cue(0.0, 1.2346, "Hello there."), Cue(1.5, 3661.002, "你好。\n\nSecond --> line")]


def test_srt_numbering_stamps_and_blank_line_rules():
    assert to_srt(CUES) == (
        "1\n00:00:00,000 --> 00:00:01,235\nHello there.\n\n"
        "2\n00:00:01,500 --> 01:01:01,002\n你好。\nSecond → line\n")


def test_vtt_header_and_dot_stamps():
    assert to_vtt(CUES) == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.235\nHello there.\n\n"
        "00:00:01.500 --> 01:01:01.002\n你好。\nSecond → line\n")


def test_shifted_moves_every_cue():
    (cue,) = shifted(CUES[:1], 2.0)
    assert (cue.start_s, cue.end_s, cue.text) == (2.0, pytest.approx(3.2346), "Hello there.")


@pytest.mark.parametrize("start,end", [(-0.1, 1.0), (2.0, 1.0)])
def test_bad_cue_is_refused(start, end):
    with pytest.raises(ValueError, match="start <= end"):
        Cue(start, end, "x")
