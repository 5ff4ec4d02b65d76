"""Prompts of known text made with the app's own voices (nothing committed), and managers
holding the prompt checks' VAD and one recognizer each; fixtures in conftest.py."""

from __future__ import annotations

from pathlib import Path

EN_TEXT = ("The museum opens early in the morning. Children can visit it for free with their "
           "parents on Sundays.")  # no numbers: the recognizer writes them as digits
ZH_TEXT = "这家小店的面条非常好吃，每天中午都有很多人排队，老板总是笑着跟客人打招呼。"
# Read by zm_yunxi, the English-only tiny.en decodes this into a loop ("20,000,000,…") with a
# high log-probability (−0.11): the case only the loop rule refuses.
ZH_LOOP_TEXT = "春天来了，公园里的花都开了，孩子们在草地上放风筝，老人们坐在长椅上聊天。"


def speak(folder: Path, name: str, text: str, voice: str) -> Path:
    from cosyvoice.audio.io import write_wav_atomic
    from cosyvoice.pipeline import SynthesisRequest
    from tests.conftest import local_services

    synth = local_services(folder / "services").synth
    res = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
    return write_wav_atomic(folder / f"{name}.wav", res.wav, res.sample_rate)


def recognizer_manager(choice: str):
    from cosyvoice.bootstrap import shared_specs
    from cosyvoice.lifecycle.manager import ModelManager
    from cosyvoice.settings import Settings

    specs = shared_specs(Settings(asr_model=choice))
    return ModelManager("cpu", [s for s in specs if s.name in ("vad", "asr")])
