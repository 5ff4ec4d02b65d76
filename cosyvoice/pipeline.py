"""The Synthesizer: a request → the shared stages → an engine → joined, saved audio.

Data flows one way: request checks against the engine's capabilities → the one text pass
(:func:`~cosyvoice.frontend.plan.plan_text`) → prompt validation → the engine's
``synthesize`` (its own models, reached through the ModelManager) → chunks joined with
cross-fades (:class:`~cosyvoice.audio.join.ChunkJoiner`) → a WAV in outputs/. Nothing here
outlives a request but the bounded validated-prompt cache.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from cosyvoice.audio.io import write_wav_atomic
from cosyvoice.audio.join import ChunkJoiner
from cosyvoice.engine.base import (
    SEED_MAX,
    SPEED_RANGE,
    STRENGTH_RANGE,
    Capabilities,
    Engine,
    EngineRequest,
)
from cosyvoice.errors import PromptError, TextError
from cosyvoice.frontend.plan import Sentence, main_language, plan_text
from cosyvoice.lifecycle.drain import RequestTracker
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.lifecycle.oom import call_with_oom_retry
from cosyvoice.settings import Settings
from cosyvoice.speaker.cache import LruCache
from cosyvoice.speaker.validation import PromptAudio, PromptLimits, validate_prompt
from cosyvoice.voice.blend import is_blend_spec, parse_blend
from cosyvoice.voice.store import SavedVoice, VoiceStore

logger = logging.getLogger(__name__)

PROMPT_CACHE_SIZE = 8

ProgressFn = Callable[[float, str], None]


@dataclass
class SynthesisRequest:
    """What a user asked for. ``seed`` None means a fresh random rendering; ``voice`` None
    means the engine's default voice."""

    text: str
    mode: str = "preset"
    voice: str | None = None
    prompt_path: str | None = None
    prompt_text: str = ""
    speed: float = 1.0
    seed: int | None = None
    strength: float = 1.0
    instruction: str = ""  # natural language style (emotion, speed, volume, pitch, dialect)


@dataclass
class AudioChunk:
    """One synthesized sentence: float32 mono ``(T,)`` at ``sample_rate``."""

    index: int
    total: int
    text: str
    wav: np.ndarray
    sample_rate: int
    notes: list[str] = field(default_factory=list)  # the request's notes, on chunk 0


@dataclass
class SynthesisResult:
    wav: np.ndarray
    sample_rate: int
    path: Path
    elapsed_s: float
    sentences: int
    notes: list[str] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return len(self.wav) / self.sample_rate

    @property
    def rtf(self) -> float:
        return self.elapsed_s / max(self.duration_s, 1e-6)


class Synthesizer:
    """Turns :class:`SynthesisRequest` into audio with one :class:`Engine`."""

    def __init__(self, engine: Engine, manager: ModelManager, settings: Settings,
                 tracker: RequestTracker | None = None) -> None:
        self.engine = engine
        self.manager = manager  # shared stages' models (VAD) and the engine's, for readings
        self.settings = settings
        self.tracker = tracker or RequestTracker()  # in-flight count, drain refusal, stats
        self.limits = PromptLimits.from_settings(settings)
        # file bytes' sha256 → validated PromptAudio: a repeated prompt skips decoding, VAD
        # and trimming. Few entries: each holds up to 30 s of audio (2.6 MB).
        self._validated = LruCache(PROMPT_CACHE_SIZE)
        self.voices = VoiceStore.for_settings(settings, reserved=tuple(self.capabilities.voices))

    @property
    def capabilities(self) -> Capabilities:
        return self.engine.capabilities

    @property
    def sample_rate(self) -> int:
        return int(self.capabilities.sample_rate)

    # ---- request checking -------------------------------------------------------------
    def check(self, req: SynthesisRequest) -> None:
        """Validate the cheap fields against the engine's capabilities; raises TextError /
        PromptError with a clear message."""
        caps = self.capabilities
        if req.mode not in caps.modes:
            raise TextError(f"the {caps.name} engine does not offer mode {req.mode!r}; "
                            f"choose one of: {caps.mode_help()}")
        _check_range("speed", req.speed, SPEED_RANGE)
        _check_range("similarity strength", req.strength, STRENGTH_RANGE)
        if req.seed is not None and not (0 <= int(req.seed) <= SEED_MAX):
            raise TextError(f"seed must be between 0 and {SEED_MAX}, or empty for random")
        if self.uses_voice(req) and req.voice:
            self.resolve_voice(req.voice)
        if req.mode in caps.prompt_modes and not req.prompt_path:
            what = {"clone": "3-second cloning", "cross_lingual": "cross-lingual cloning"
                    }.get(req.mode, f"{req.mode} mode")
            raise PromptError(f"{what} needs a prompt recording: upload or record 3–30 s of "
                              "clear speech")
        if req.mode in caps.transcript_modes and req.prompt_path and not req.prompt_text.strip():
            raise PromptError(f"the {caps.name} engine needs the prompt's transcript in "
                              f"{req.mode} mode: type what the recording says")
        if req.mode == "instruct" and not req.instruction.strip():
            raise TextError("instruct mode needs an instruction, e.g. \"speak happily and a bit "
                            "faster\" or \"用四川话说这句话\" / 自然语言控制需要填写指令")

    def voice_names(self) -> list[str]:
        """The engine's voices, then the saved ones where the engine takes them."""
        saved = self.voices.names() if self.capabilities.saved_voices else []
        return [*self.capabilities.voices, *saved]

    def resolve_voice(self, name: str) -> tuple[str, SavedVoice | None]:
        """``(voice as the engine takes it, saved voice or None)`` for a preset name, a
        saved voice or a blend (canonical spec); raises TextError naming the choices."""
        caps = self.capabilities
        if name in caps.voices:
            return name, None
        saved = self.voices.find(name) if caps.saved_voices else None
        if saved is not None:
            return saved.name, saved
        if is_blend_spec(name) and caps.blend_voices:
            return parse_blend(name, caps.blend_voices).spec, None
        raise TextError(f"unknown voice {name!r}; available: {', '.join(self.voice_names())}"
                        + (f"; or a blend such as {caps.blend_voices[0]}:2+"
                           f"{caps.blend_voices[-1]}:1" if caps.blend_voices else ""))

    def voice_language(self, voice: str, saved: SavedVoice | None = None) -> str | None:
        """The language a voice reads its text in where it is not English/Mandarin (a
        French voice: ``fr``); a blend's is its heaviest voice's."""
        caps = self.capabilities
        if saved is not None and saved.blend is not None:
            voice = saved.blend.lead
        elif voice not in caps.voices and is_blend_spec(voice):
            voice = parse_blend(voice, caps.blend_voices, user=False).lead
        return caps.voice_languages.get(voice)

    def default_voice(self, sentences: list[Sentence]) -> str:
        """The voice of a request that names none: the engine's pick for the text's main
        language, else its default."""
        caps = self.capabilities
        lang = main_language(" ".join(s.text for s in sentences)) if sentences else ""
        return caps.language_voices.get(lang, caps.default_voice)

    def uses_voice(self, req: SynthesisRequest) -> bool:
        """Whether the request's voice speaks (a voice mode, and no prompt in instruct)."""
        if req.mode not in self.capabilities.voice_modes:
            return False
        return req.mode == "preset" or not req.prompt_path

    def _engine_request(self, req: SynthesisRequest) -> EngineRequest:
        self.check(req)
        voice, saved = (self.resolve_voice(req.voice) if req.voice and self.uses_voice(req)
                        else (None, None))
        sentences: list[Sentence] = plan_text(
            req.text, self.settings.max_text_chars, self.voice_language(voice or "", saved),
            voice or "")
        voice = voice or req.voice or self.default_voice(sentences)
        out = EngineRequest(req.mode, sentences, voice, speed=float(req.speed),
                            seed=req.seed, strength=float(req.strength),
                            instruction=req.instruction, prompt_text=req.prompt_text)
        if req.prompt_path and not self.uses_voice(req):
            out.prompt = self.validate_prompt(Path(req.prompt_path))
            out.notes.extend(out.prompt.notes)
        elif self.uses_voice(req):
            out.saved_voice = saved
        return out

    def validate_prompt(self, path: Path) -> PromptAudio:
        """Validate a prompt recording at the engine's rate (cached by the file's hash)."""
        file_key = _file_digest(path, self.limits.max_upload_bytes)
        hit = self._validated.get(file_key) if file_key else None
        if hit is not None:
            return hit
        prompt = validate_prompt(path, self.limits, self.manager.get("vad"),
                                 target_sr=self.sample_rate,
                                 speakers=lambda: self.manager.get("speaker_encoder"))
        if file_key:
            self._validated.put(file_key, prompt)
        return prompt

    def prompt_profile(self, path: Path) -> tuple[PromptAudio, object]:
        """Validate a prompt and make what a saved voice stores for this engine."""
        if not self.capabilities.saved_voices:
            raise TextError(f"the {self.capabilities.name} engine does not take saved voices")
        prompt = self.validate_prompt(Path(path))
        return prompt, self.engine.voice_from_prompt(prompt)

    # ---- synthesis --------------------------------------------------------------------
    def stream(self, req: SynthesisRequest) -> Iterator[AudioChunk]:
        """Yield one chunk per sentence as soon as it is ready (errors raised up front).

        The chunks are the cross-faded pieces of :meth:`synthesize`'s output (see
        :class:`ChunkJoiner`): concatenated, they are its samples exactly.
        """
        with self.tracker.track(req.mode):
            request = self._engine_request(req)
            yield from self._joined(request, self.engine.synthesize(request))

    def _joined(self, request: EngineRequest, chunks) -> Iterator[AudioChunk]:
        joiner = ChunkJoiner(self.sample_rate)
        total = len(request.sentences)
        pending: list[np.ndarray] = []
        for chunk in chunks:
            pending.append(chunk.wav)
            if not chunk.final:
                continue
            sentence = request.sentences[chunk.sentence]
            last = chunk.sentence == total - 1
            wav = joiner.push(np.concatenate(pending) if len(pending) > 1 else pending[0],
                              last=last, pause_s=sentence.pause_after_s,
                              breath=sentence.breath_after)
            pending = []
            notes = list(request.notes) if chunk.sentence == 0 else []
            yield AudioChunk(chunk.sentence, total, sentence.text, wav, self.sample_rate, notes)

    def synthesize(self, req: SynthesisRequest, progress: ProgressFn | None = None
                   ) -> SynthesisResult:
        """Render every sentence, join them with short cross-fades, save a WAV in outputs/.

        Tracked (refused with a retryable BusyError while draining); a CUDA OOM frees
        memory and retries once before a clear ModelError.
        """
        with self.tracker.track(req.mode):
            return call_with_oom_retry(lambda: self._synthesize(req, progress))

    def _synthesize(self, req: SynthesisRequest, progress: ProgressFn | None
                    ) -> SynthesisResult:
        t0 = time.perf_counter()
        request = self._engine_request(req)
        pieces: list[np.ndarray] = []
        sr = self.sample_rate
        for chunk in self._joined(request, self.engine.synthesize(request)):
            pieces.append(chunk.wav)
            if progress is not None:
                progress((chunk.index + 1) / chunk.total,
                         f"sentence {chunk.index + 1}/{chunk.total}")
        wav = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        path = write_wav_atomic(self.output_path(req), wav, sr)
        elapsed = time.perf_counter() - t0
        logger.info("synthesized %d sentences, %.2f s audio in %.2f s (%s)", len(pieces),
                    len(wav) / sr, elapsed, req.mode)
        return SynthesisResult(wav, sr, path, elapsed, len(pieces), request.notes)

    def output_path(self, req: SynthesisRequest) -> Path:
        """``outputs/20261202-183501_clone_hello-world-this_ab12cd.wav``"""
        words = re.findall(r"[A-Za-z0-9]+", req.text.lower())[:4]
        slug = "-".join(words)[:40] or "speech"
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        name = f"{stamp}_{req.mode}_{slug}_{uuid.uuid4().hex[:6]}.wav"
        return Path(self.settings.outputs_dir) / name


def _file_digest(path: Path, max_bytes: int) -> str | None:
    """sha256 of the file's bytes; None where it cannot be read or is over ``max_bytes``
    (validation then says why)."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _check_range(name: str, value: float, bounds: tuple[float, float]) -> None:
    try:
        v = float(value)
    except (TypeError, ValueError) as e:
        raise TextError(f"{name} must be a number between {bounds[0]} and {bounds[1]}") from e
    if not (bounds[0] <= v <= bounds[1]) or v != v:
        raise TextError(f"{name} is {value}; it must be between {bounds[0]} and {bounds[1]}")
