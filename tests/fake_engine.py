"""A tiny engine for tests only: other capabilities than the offline engine (two modes,
one voice, 16 kHz, no streaming, no instructions, no saved voices, a transcript required
in clone mode). It speaks each sentence as a short tone whose pitch follows its voice, or
the prompt's loudness in clone mode. Registered with
``--engine fake --engine-plugins fake=tests.fake_engine:FACTORY``; the UI, REST API and CLI
must offer exactly its modes without a change to their code."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cosyvoice.engine.base import Capabilities, EngineChunk, EngineFactory, EngineRequest

CAPABILITIES = Capabilities(
    name="fake",
    label="Fake (tests only)",
    modes=("preset", "clone"),
    languages=("en",),
    voices={"beep": "Beep · a 440 Hz tone"},
    default_voice="beep",
    sample_rate=16000,
    prompt_modes=("clone",),
    transcript_modes=("clone",),
    voice_modes=("preset",),
    streaming=False,
    instructions=False,
    seed_deterministic=True,
    saved_voices=False,
)


class FakeEngine:
    capabilities = CAPABILITIES

    def synthesize(self, request: EngineRequest) -> Iterator[EngineChunk]:
        sr = self.capabilities.sample_rate
        level = 0.3 if request.prompt is None else float(
            np.clip(np.sqrt(np.mean(request.prompt.wav ** 2)) * 3, 0.05, 0.9))

        def chunks() -> Iterator[EngineChunk]:
            for i, sentence in enumerate(request.sentences):
                n = int(sr * 0.05 * max(1, len(sentence.text.split())) / request.speed)
                t = np.arange(n) / sr
                yield EngineChunk(i, (level * np.sin(2 * np.pi * 440 * t)).astype(np.float32))

        return chunks()

    def voice_from_prompt(self, prompt, prompt_text=""):
        return None

    def warm(self) -> None:
        pass


FACTORY = EngineFactory(CAPABILITIES, lambda settings: [],
                        lambda manager, settings: FakeEngine())
