"""``dataclass_from_dict``: the one builder behind every config's ``from_dict``."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

import pytest

from cosyvoice.config import dataclass_from_dict, field_names
from cosyvoice.errors import CosyVoiceError


class _BadConfig(CosyVoiceError):
    pass


@dataclass
class _Config:
    name: str
    rate: int = 22050
    gains: list[float] = field(default_factory=lambda: [1.0, 0.5])
    cached: int = field(default=0, init=False)


def test_unknown_keys_are_ignored_by_default():
    cfg = dataclass_from_dict(_Config, {"name": "a", "rate": 16000, "batch_size": 16})
    assert cfg == _Config("a", 16000)


def test_unknown_keys_raise_the_given_error_naming_them_and_the_fields():
    with pytest.raises(_BadConfig, match=r"unknown test fields \['batch_size'\]; "
                                         r"use \['gains', 'name', 'rate'\]"):
        dataclass_from_dict(_Config, {"name": "a", "batch_size": "x"},
                            unknown_error=_BadConfig, what="test")


def test_missing_keys_take_their_defaults_and_a_required_one_raises():
    cfg = dataclass_from_dict(_Config, {"name": "a"})
    assert (cfg.rate, cfg.gains) == (22050, [1.0, 0.5])
    assert cfg.gains is not dataclass_from_dict(_Config, {"name": "b"}).gains
    with pytest.raises(TypeError, match="name"):
        dataclass_from_dict(_Config, {"rate": 1})


def test_values_pass_as_they_are_unless_converted():
    assert dataclass_from_dict(_Config, {"name": "a", "rate": "8000"}).rate == "8000"

    @dataclass(frozen=True)
    class Gains:
        low: float = 0.0
        high: float = 0.0

    assert dataclass_from_dict(Gains, {"low": "1.5", "high": 2}, convert=float) == Gains(1.5, 2.0)


def test_init_false_fields_are_not_arguments():
    assert field_names(_Config) == {"name", "rate", "gains"}
    assert dataclass_from_dict(_Config, {"name": "a", "cached": 5}).cached == 0


def test_round_trip_through_to_dict_and_json():
    cfg = _Config("a", 44100, [0.25])
    again = dataclass_from_dict(_Config, json.loads(json.dumps(dataclasses.asdict(cfg))))
    assert again == cfg and again is not cfg


def test_every_config_round_trips():
    from cosyvoice.acoustic.fastspeech2 import FastSpeech2Config
    from cosyvoice.audio.mel import MelConfig
    from cosyvoice.lifecycle.watchdog import WatchdogConfig
    from cosyvoice.prosody.style import EmotionStyle
    from cosyvoice.speaker.encoder import EncoderConfig
    from cosyvoice.speaker.vad import VadConfig
    from cosyvoice.speaker.validation import PromptLimits
    from cosyvoice.vocoder.hifigan import HifiGanConfig
    from cosyvoice.voice.adapter import AdapterConfig

    for cls in (FastSpeech2Config, MelConfig, WatchdogConfig, EncoderConfig, VadConfig,
                PromptLimits, HifiGanConfig, AdapterConfig, EmotionStyle):
        cfg = cls()
        assert cls.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg, cls.__name__
