"""Golden behaviour of prompt validation on generated good and bad recordings."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cosyvoice.errors import PromptError
from cosyvoice.settings import Settings
from cosyvoice.speaker.validation import PromptLimits, clip_fraction, validate_prompt

# fixture name → phrases the message must contain, and whether the VAD may run at all.
REJECTIONS = {
    "empty": (["empty", "0 bytes", "WAV, FLAC, OGG or MP3"], False),
    "no_samples": (["no audio samples", "3–30 s"], False),
    "truncated_header": (["could not read", "not audio or it is damaged", "upload a WAV"], False),
    "truncated_data": (["truncated", "128044 of 320044 bytes", "upload the complete file"],
                       False),
    "text_as_wav": (["could not read", "looks like a text file"], False),
    "random_bytes": (["could not read", "not audio or it is damaged"], False),
    "elf_as_wav": (["could not read", "looks like a program"], False),
    "speech_8k": (["8000 Hz", "at least 16000 Hz", "44.1 or 48 kHz"], False),
    "speech_1s": (["prompt audio is 1.2 s of speech after trimming silence",
                   "need 3–30 s", "record a longer sentence"], True),
    "speech_40s": (["of speech after trimming silence", "need 3–30 s",
                    "cut it to one or two sentences"], True),
    "ten_minutes": (["10 min long", "files over 1 min", "3–30 s"], False),
    "silence": (["silent", "microphone"], False),
    "white_noise": (["no speech was found", "quiet room"], True),
    "speech_noise_gap": (["only 4.", "s prompt is speech", "speaking continuously"], True),
    "clipped_square": (["heavily clipped", "100.0 %", "volume turned down"], False),
    "clipped_speech": (["heavily clipped", "volume turned down"], False),
    "nine_channels": (["9 channels", "at most 8", "mono or stereo"], False),
    "nan_float": (["NaN or infinity", "export it again"], False),
    "sr_768k": (["768000 Hz", "not a real recording rate"], False),
    "oversize": (["21.0 MB", "the limit is 20 MB", "shorter clip"], False),
}


@pytest.mark.parametrize("name", sorted(REJECTIONS))
def test_rejection_message(name, prompts, counting_vad):
    phrases, vad_may_run = REJECTIONS[name]
    with pytest.raises(PromptError) as info:
        validate_prompt(prompts[name], PromptLimits(), counting_vad)
    message = str(info.value)
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} missing from {message!r}"
    if not vad_may_run:
        assert counting_vad.calls == 0, "rejected files must not reach the VAD"


def test_decoder_errors_are_chained(prompts, vad):
    with pytest.raises(PromptError) as info:
        validate_prompt(prompts["random_bytes"], PromptLimits(), vad)
    assert info.value.__cause__ is not None


def test_missing_file_and_folder(tmp_path, vad):
    with pytest.raises(PromptError, match="not found; upload it again"):
        validate_prompt(tmp_path / "nope.wav", PromptLimits(), vad)
    with pytest.raises(PromptError, match="is not a file"):
        validate_prompt(tmp_path, PromptLimits(), vad)


def test_good_prompt_is_trimmed_resampled_and_normalized(prompts, vad):
    prompt = validate_prompt(prompts["good_44k"], PromptLimits(), vad, target_sr=22050)
    assert prompt.sr == 22050 and prompt.original_sr == 44100
    assert prompt.wav.dtype == np.float32 and prompt.wav.ndim == 1
    # 10 s file: 1 s of padding each side plus the clips' own pauses are trimmed.
    assert 6.0 < prompt.duration_s < 8.0
    assert prompt.duration_s == pytest.approx(len(prompt.wav) / 22050)
    assert 4.5 < prompt.speech_s <= prompt.duration_s
    assert float(np.abs(prompt.wav).max()) == pytest.approx(0.95, abs=1e-3)
    assert any("trimmed" in note for note in prompt.notes)


def test_real_mp3_is_accepted(prompts, vad):
    prompt = validate_prompt(prompts["real_mp3"], PromptLimits(), vad, target_sr=16000)
    assert prompt.original_sr == 32000 and prompt.sr == 16000
    assert 6.0 < prompt.duration_s < 7.5


def test_stereo_with_silent_channel_is_accepted(prompts, vad):
    prompt = validate_prompt(prompts["stereo_one_silent"], PromptLimits(), vad)
    assert prompt.original_sr == 48000
    assert any("ignored 1 silent channel" in note for note in prompt.notes)
    assert prompt.duration_s > 4.0


def test_limits_are_honoured(prompts, vad):
    lenient = dataclasses.replace(PromptLimits(), min_s=1.0)
    assert validate_prompt(prompts["speech_1s"], lenient, vad).duration_s < 1.6
    strict = dataclasses.replace(PromptLimits(), max_s=5.0)
    with pytest.raises(PromptError, match="need 3–5 s"):
        validate_prompt(prompts["good_44k"], strict, vad)


def test_limits_from_settings_and_dict():
    settings = Settings(prompt_min_s=2.5, prompt_max_s=20.0, prompt_min_sr=22050,
                        max_upload_mb=5.0)
    limits = PromptLimits.from_settings(settings)
    assert (limits.min_s, limits.max_s, limits.min_sr) == (2.5, 20.0, 22050)
    assert limits.max_upload_bytes == 5 * 1024 * 1024
    assert limits.max_file_s >= 2 * limits.max_s
    assert PromptLimits.from_dict(limits.to_dict()) == limits


def test_clip_fraction_counts_only_non_silent_samples():
    x = np.zeros(1000, dtype=np.float32)
    x[:100] = 0.5
    x[:10] = 1.0
    assert clip_fraction(x) == pytest.approx(0.1)
    assert clip_fraction(np.zeros(10, dtype=np.float32)) == 0.0
