"""Piper's speed is what was asked: VITS's per-phone frame rounding alone under-delivers."""

from __future__ import annotations

import pytest

from cosyvoice.acoustic.piper_en import PiperEnglish

TEXT = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."


@pytest.fixture(scope="module")
def piper():
    return PiperEnglish.load()


@pytest.mark.parametrize("speed", [0.8, 1.15, 1.3])
def test_duration_follows_the_asked_speed(piper, speed):
    neutral = len(piper.synthesize(TEXT, seed=3).wav)
    fast = piper.synthesize(TEXT, speed=speed, seed=3).wav
    assert neutral / len(fast) == pytest.approx(speed, rel=0.02)
    assert 0.05 < abs(fast).max() <= 1.0


def test_speed_one_is_one_pass_and_bit_identical(piper):
    a = piper.synthesize(TEXT, seed=3).wav
    b = piper.synthesize(TEXT, speed=1.0, seed=3).wav
    assert (a == b).all()
