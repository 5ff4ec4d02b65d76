"""The Engine boundary: what every surface (UI, REST, OpenAI, CLI) talks to.

An engine declares its :class:`Capabilities` as data — modes, languages, voices, streaming,
instructions, seed determinism, sample rate — and has one entry point,
:meth:`Engine.synthesize`, that takes an :class:`EngineRequest` (sentences the frontend has
already cleaned, split and normalized; a prompt already validated) and yields
:class:`EngineChunk` audio. Everything above the boundary (request checks, the text pass,
prompt validation, joining, saving, encoding) is shared; everything below it is the
engine's business — its models, its vocoder if it has one, how it conditions on a voice.

The offline engine (:mod:`cosyvoice.engine.offline`) is a text frontend → acoustic model
→ voice adapter → HiFi-GAN chain; an end-to-end engine (text + prompt in, speech out,
e.g. CosyVoice2/3 checkpoints) fits the same interface: it reads ``sentence.text`` or the
joined run texts, ``prompt.wav`` and ``prompt_text``, and yields its own audio.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from cosyvoice.frontend.plan import Sentence
    from cosyvoice.lifecycle.manager import ModelManager, ModelSpec
    from cosyvoice.settings import Settings
    from cosyvoice.speaker.validation import PromptAudio

# Request limits every surface and engine shares.
SPEED_RANGE = (0.5, 2.0)
STRENGTH_RANGE = (0.0, 1.0)
SEED_MAX = 2**31 - 1
INSTRUCTION_MAX_CHARS = 1000  # the longest style instruction, on every surface

# Every mode a surface knows how to ask for, with its help text; an engine offers a subset.
MODE_HELP = {
    "preset": "a bundled or saved voice",
    "clone": "3-second cloning from a prompt recording",
    "cross_lingual": "a prompt in one language speaking text in another",
    "instruct": "an instruction such as \"speak happily\" / \"用四川话说\"",
}


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, as data; the UI and API build their controls from it.

    ``prompt_modes`` need a prompt recording, ``transcript_modes`` also its transcript;
    ``voice_modes`` speak ``voices`` (in ``instruct`` only when no prompt is given).
    ``part_chars``: per language, the longest run its backend speaks at once (the
    frontend cuts longer ones). ``saved_voices``: whether voices saved from a prompt work.
    ``blend_voices``: the voices a blend (``af_bella:2+af_sky:1``) may mix, saved or not.
    ``language_voices``: per text language, the voice used when a request names none (the
    others get ``default_voice``). ``voice_languages``: voices that read their text in a language of
    :data:`~cosyvoice.frontend.languages.LANGUAGES` (a French voice reads Latin-script text
    as French); other voices read English and Mandarin. ``cloning``: how a prompt's voice
    is cloned: ``"blend"`` (of the preset voices nearest to it), ``"adapter"`` (a preset
    voice moved toward its pitch, timbre and formants), ``"model"`` (zero-shot by the
    model), ``""`` (no cloning); the page's introduction says which. ``clone_strength``:
    whether the similarity strength changes a clone (the UI shows its slider only then).
    ``voice_fitting``: whether the engine fits a voice to a prompt as a background job
    (a saved voice of kind ``fitted``: a Kokoro style pack, ``cosyvoice.voice.fit``).
    """

    name: str
    label: str
    modes: tuple[str, ...]
    languages: tuple[str, ...]
    voices: Mapping[str, str]  # preset name → label
    default_voice: str
    sample_rate: int
    prompt_modes: tuple[str, ...] = ()
    transcript_modes: tuple[str, ...] = ()
    voice_modes: tuple[str, ...] = ("preset",)
    streaming: bool = True
    instructions: bool = False
    seed_deterministic: bool = True
    saved_voices: bool = False
    part_chars: Mapping[str, int] = field(default_factory=dict)
    blend_voices: tuple[str, ...] = ()
    language_voices: Mapping[str, str] = field(default_factory=dict)
    voice_languages: Mapping[str, str] = field(default_factory=dict)
    cloning: str = ""
    clone_strength: bool = False
    voice_fitting: bool = False

    def mode_help(self) -> str:
        return ", ".join(f"{m} ({MODE_HELP.get(m, m)})" for m in self.modes)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "modes": list(self.modes),
                "languages": list(self.languages), "voices": dict(self.voices),
                "default_voice": self.default_voice, "sample_rate": self.sample_rate,
                "prompt_modes": list(self.prompt_modes),
                "transcript_modes": list(self.transcript_modes),
                "streaming": self.streaming, "instructions": self.instructions,
                "seed_deterministic": self.seed_deterministic,
                "saved_voices": self.saved_voices, "blend_voices": list(self.blend_voices),
                "language_voices": dict(self.language_voices),
                "voice_languages": dict(self.voice_languages), "cloning": self.cloning,
                "clone_strength": self.clone_strength, "voice_fitting": self.voice_fitting}


@dataclass
class EngineRequest:
    """One checked request, as an engine receives it.

    ``sentences``: the frontend's output (normalized language runs). ``prompt``: the
    validated recording at the engine's sample rate (None without one). ``saved_voice``:
    the stored voice when ``voice`` names a saved one. ``notes``: the engine appends what
    the user should know (shown with the result). ``stream``: the caller plays chunks as
    they come (:meth:`~cosyvoice.pipeline.Synthesizer.stream`), so an engine that can cut a
    sentence into pieces early (token hops) should; a saved synthesis asks for whole ones.
    """

    mode: str
    sentences: list[Sentence]
    voice: str
    speed: float = 1.0
    seed: int | None = None
    strength: float = 1.0
    instruction: str = ""
    prompt: PromptAudio | None = None
    prompt_text: str = ""
    saved_voice: Any = None
    notes: list[str] = field(default_factory=list)
    stream: bool = False


@dataclass
class EngineChunk:
    """Audio for sentence ``sentence``: float32 mono ``(T,)`` at the engine's sample rate.
    A sentence may come in several chunks (pieces of it in order, passed on as they come);
    ``final`` marks its last. An engine with a token
    LLM reports, on a sentence's final chunk, the speech tokens it decoded for it and the
    seconds that took (``/metrics``' tokens/s). ``marks``: ``(start_s, end_s, text)`` per
    word or syllable in seconds of this chunk's ``wav``, where the engine knows them."""

    sentence: int
    wav: np.ndarray
    final: bool = True
    llm_tokens: int = 0
    llm_s: float = 0.0
    marks: list[tuple[float, float, str]] = field(default_factory=list)


@runtime_checkable
class Engine(Protocol):
    """A synthesis engine. ``synthesize`` checks the request eagerly (raising
    :class:`~cosyvoice.errors.CosyVoiceError` subclasses before returning) and returns an
    iterator of chunks in sentence order."""

    capabilities: Capabilities

    def synthesize(self, request: EngineRequest) -> Iterator[EngineChunk]:
        ...

    def voice_from_prompt(self, prompt: PromptAudio, prompt_text: str = "") -> Any:
        """What a saved voice stores for this engine: a voice profile, or a dict of tensors
        (saved as voice.pt). ``prompt_text``: the prompt's transcript, if the user gave one."""
        ...

    def warm(self) -> None:
        """One-time work after the models load (counted in load time, not in a request)."""
        ...


@dataclass(frozen=True)
class EngineFactory:
    """How the app makes an engine: its capabilities (cheap: no models), the model specs
    it needs managed, and a builder that binds it to the ModelManager."""

    capabilities: Capabilities
    specs: Callable[[Settings], list[ModelSpec]]
    build: Callable[[ModelManager, Settings], Engine]
    # capabilities that depend on the settings (a CosyVoice folder's preset speakers)
    configured: Callable[[Settings], Capabilities] | None = None

    def capabilities_for(self, settings: Settings) -> Capabilities:
        """The capabilities under ``settings`` (cheap: reads no model)."""
        return self.configured(settings) if self.configured else self.capabilities

    def model_specs(self, settings: Settings) -> list[ModelSpec]:
        return list(self.specs(settings))

    def create(self, manager: ModelManager, settings: Settings) -> Engine:
        return self.build(manager, settings)
