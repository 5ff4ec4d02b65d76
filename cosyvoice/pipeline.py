"""The Synthesizer: a request → the shared stages → an engine → joined, saved audio.

The app serves several engines by name (the offline engine always; a CosyVoice engine when a
folder is configured). A request names one (``engine``) or gets the default; when the default
engine's models FAILED, a request that named none is answered by the offline engine with a
note saying why, and one that named it gets a 503 with the reason (:meth:`Synthesizer.route`).
Every engine runs through the same code below: :meth:`Synthesizer.using` is a view of the one
Synthesizer bound to another engine, sharing its manager, caches, voices and tracker.

Data flows one way: request checks against the engine's capabilities → the one text pass
(:func:`~cosyvoice.frontend.plan.plan_text`) → prompt validation → the engine's
``synthesize`` (its own models, reached through the ModelManager) → chunks joined with
cross-fades (:class:`~cosyvoice.audio.join.ChunkJoiner`) → a WAV in outputs/. Nothing here
outlives a request but the bounded validated-prompt cache.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from cosyvoice.audio.io import write_wav_atomic
from cosyvoice.audio.join import ChunkJoiner
from cosyvoice.engine.base import (
    INSTRUCTION_MAX_CHARS,
    SEED_MAX,
    SPEED_RANGE,
    STRENGTH_RANGE,
    Capabilities,
    Engine,
    EngineRequest,
)
from cosyvoice.errors import ModelError, PromptError, TextError
from cosyvoice.frontend.lexicon import Lexicon
from cosyvoice.frontend.plan import Sentence, main_language, plan_text
from cosyvoice.lifecycle.compute import ComputeThreads
from cosyvoice.lifecycle.drain import RequestTracker
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.lifecycle.oom import call_with_oom_retry
from cosyvoice.settings import Settings
from cosyvoice.speaker.cache import LruCache
from cosyvoice.speaker.validation import PromptAudio, PromptLimits, validate_prompt
from cosyvoice.subtitles import Cue, clamp_cues, write_beside
from cosyvoice.voice.blend import is_blend_spec, parse_blend
from cosyvoice.voice.store import SavedVoice, VoiceStore

logger = logging.getLogger(__name__)

PROMPT_CACHE_SIZE = 8

ProgressFn = Callable[[float, str], None]
PROMPT_UNUSED_NOTE = ("the prompt recording was not used: {mode} mode speaks the chosen voice "
                      "(choose a cloning mode to speak in the recording's voice) / "
                      "未使用参考音频：该模式使用所选音色（如需复刻请选择复刻模式）")


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
    engine: str | None = None  # None: the default engine (see Synthesizer.route)


@dataclass
class AudioChunk:
    """Joined audio of sentence ``index`` of ``total``: float32 mono ``(T,)`` at
    ``sample_rate`` — the whole sentence, or (when streaming on an engine's token hops) a
    piece of it; ``final`` marks a sentence's last chunk."""

    index: int
    total: int
    text: str
    wav: np.ndarray
    sample_rate: int
    notes: list[str] = field(default_factory=list)  # the request's notes, on the first chunk
    final: bool = True
    # on a sentence's final chunk: where its speech lies in the joined output
    start_s: float = 0.0  # where the sentence's audio lies in the joined output
    end_s: float = 0.0
    words: list[Cue] = field(default_factory=list)  # where the engine knows durations

    def cue(self) -> Cue:
        """The sentence's subtitle cue."""
        return Cue(self.start_s, max(self.start_s, self.end_s), self.text)


@dataclass
class SynthesisResult:
    wav: np.ndarray
    sample_rate: int
    path: Path
    elapsed_s: float
    sentences: int
    notes: list[str] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)  # one per sentence, in output time
    word_cues: list[Cue] = field(default_factory=list)  # per word/syllable, where known

    @property
    def duration_s(self) -> float:
        return len(self.wav) / self.sample_rate

    @property
    def rtf(self) -> float:
        return self.elapsed_s / max(self.duration_s, 1e-6)


FALLBACK_ENGINE = "offline"  # answers requests that named no engine when the default failed


class Synthesizer:
    """Turns :class:`SynthesisRequest` into audio with the engines it holds by name.

    ``engines``: name → engine, the default first (or one engine). ``engine_models``: name →
    the managed models it needs (their FAILED reasons decide :meth:`route`). ``engine`` and
    ``capabilities`` are this view's engine: the default one, or another (:meth:`using`).
    """

    def __init__(self, engines: Mapping[str, Engine] | Engine, manager: ModelManager,
                 settings: Settings, tracker: RequestTracker | None = None,
                 engine_models: Mapping[str, list[str]] | None = None) -> None:
        if not isinstance(engines, Mapping):
            engines = {engines.capabilities.name: engines}
        self.engines = dict(engines)
        self.default_engine = next(iter(self.engines))
        self.engine = self.engines[self.default_engine]
        self.engine_models = {name: list((engine_models or {}).get(name, ()))
                              for name in self.engines}
        self.manager = manager  # shared stages' models (VAD) and the engines', for readings
        self.settings = settings
        self.tracker = tracker or RequestTracker()  # in-flight count, drain refusal, stats
        self.limits = PromptLimits.from_settings(settings)
        # (file bytes' sha256, rate) → validated PromptAudio: a repeated prompt skips decoding,
        # VAD and trimming. Few entries: each holds up to 30 s of audio (2.6 MB).
        self._validated = LruCache(PROMPT_CACHE_SIZE)
        reserved = tuple(v for e in self.engines.values() for v in e.capabilities.voices)
        self.voices = VoiceStore.for_settings(settings, reserved=reserved)
        self.lexicon = Lexicon.for_settings(settings)  # models/lexicon.json, read on change
        # The engines run on these long-lived threads, not on whichever thread the caller
        # was lent (see cosyvoice/lifecycle/compute.py); shared by the views of using().
        self.compute = ComputeThreads()

    # ---- engines ----------------------------------------------------------------------
    def using(self, name: str | None) -> Synthesizer:
        """This Synthesizer bound to engine ``name`` (None: the default), sharing everything
        else; TextError naming the choices for an engine not served."""
        name = name or self.default_engine
        if name not in self.engines:
            raise TextError(f"unknown engine {name!r}; this app serves: "
                            f"{', '.join(self.engines)}")
        if self.engines[name] is self.engine:
            return self
        view = copy.copy(self)
        view.engine = self.engines[name]
        return view

    def engine_state(self, name: str) -> dict:
        """An engine's state from its models': READY, FAILED (with the reasons), or the
        first model's other state (UNLOADED, LOADING ...); READY for an engine without
        managed models."""
        states = {m["name"]: m for m in self.manager.states()}
        models = [states[n] for n in self.engine_models.get(name, ()) if n in states]
        failed = [f"{m['name']}: {m['reason']}" for m in models if m["state"] == "FAILED"]
        other = [m["state"] for m in models if m["state"] != "READY"]
        state = "FAILED" if failed else (other[0] if other else "READY")
        return {"name": name, "label": self.engines[name].capabilities.label,
                "default": name == self.default_engine, "state": state,
                "reason": "; ".join(failed), "models": [m["name"] for m in models]}

    def engine_states(self) -> list[dict]:
        return [self.engine_state(name) for name in self.engines]

    def route(self, req: SynthesisRequest) -> tuple[Synthesizer, list[str]]:
        """``(view of the engine that answers req, notes)``. A named engine whose models
        FAILED is a ModelError (503) with the reason and what to do; the default engine's
        failure sends a request that named none to the offline engine, with a note."""
        view = self.using(req.engine)
        name = view.capabilities.name
        state = self.engine_state(name)
        if (state["state"] not in ("READY", "FAILED") and not req.engine
                and name != FALLBACK_ENGINE and FALLBACK_ENGINE in self.engines):
            # A default that can fall back, not loaded yet (--no-preload, preloading,
            # unloaded): load it now, so that a folder that fails sends even the first request
            # to the fallback engine. (The fallback itself keeps loading lazily, model by
            # model, as its requests need them.)
            for model in self.engine_models.get(name, ()):
                self.manager.settle(model)
            state = self.engine_state(name)
        if state["state"] != "FAILED":
            return view, []
        if req.engine or name == FALLBACK_ENGINE or FALLBACK_ENGINE not in self.engines:
            raise ModelError(
                f"the {name} engine is not available: {state['reason']}. Fix its model "
                f"folder and load it again (models panel, or POST /api/v1/models/"
                f"{state['models'][0] if state['models'] else name}/load), or choose another "
                f"engine ({', '.join(n for n in self.engines if n != name)}) / {name} 引擎不可用，"
                "请修正模型目录后重新加载，或选择其他引擎")
        note = (f"the {name} engine is not available ({state['reason']}); the "
                f"{FALLBACK_ENGINE} engine answered / {name} 引擎不可用，已由 "
                f"{FALLBACK_ENGINE} 引擎合成")
        return self.using(FALLBACK_ENGINE), [note]

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
        if len(req.instruction) > INSTRUCTION_MAX_CHARS:
            raise TextError(f"the instruction is {len(req.instruction):,} characters; the limit "
                            f"is {INSTRUCTION_MAX_CHARS:,}: describe the style in a sentence or "
                            f"two / 指令最长 {INSTRUCTION_MAX_CHARS} 个字符")
        if req.mode == "instruct" and not req.instruction.strip():
            raise TextError("instruct mode needs an instruction, e.g. \"speak happily and a bit "
                            "faster\" or \"用四川话说这句话\" / 自然语言控制需要填写指令")

    def validate(self, req: SynthesisRequest) -> None:
        """Every check :meth:`synthesize` makes before an engine runs (the engine route, the
        fields, the voice, the one text pass; a prompt is validated too), without
        synthesizing: a dialogue or a batch job checks all its lines this way first."""
        view, notes = self.route(req)
        view._engine_request(req, notes)

    def voice_names(self) -> list[str]:
        """The engine's voices, then the saved ones where the engine takes them."""
        return [*self.capabilities.voices, *self.saved_voice_names()]

    def saved_voice_names(self) -> list[str]:
        return [v.name for v in self.saved_voices()]

    def saved_voices(self) -> list[SavedVoice]:
        """Saved voices this engine speaks: those saved with it (a voice keeps the name of
        the engine that measured it; older voices are the offline engine's)."""
        if not self.capabilities.saved_voices:
            return []
        return [v for v in self.voices.list() if v.engine == self.capabilities.name]

    def find_saved(self, name: str) -> SavedVoice | None:
        """The saved voice ``name`` if this engine speaks it."""
        if not self.capabilities.saved_voices:
            return None
        saved = self.voices.find(name)
        return saved if saved is not None and saved.engine == self.capabilities.name else None

    def resolve_voice(self, name: str) -> tuple[str, SavedVoice | None]:
        """``(voice as the engine takes it, saved voice or None)`` for a preset name, a
        saved voice or a blend (canonical spec); raises TextError naming the choices."""
        caps = self.capabilities
        if name in caps.voices:
            return name, None
        saved = self.find_saved(name)
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

    def _engine_request(self, req: SynthesisRequest, notes: list[str] | None = None
                        ) -> EngineRequest:
        self.check(req)
        voice, saved = (self.resolve_voice(req.voice) if req.voice and self.uses_voice(req)
                        else (None, None))
        sentences: list[Sentence] = plan_text(
            req.text, self.settings.max_text_chars, self.voice_language(voice or "", saved),
            voice or "", lexicon=self.lexicon.readings())
        voice = voice or req.voice or self.default_voice(sentences)
        out = EngineRequest(req.mode, sentences, voice, speed=float(req.speed),
                            seed=req.seed, strength=float(req.strength),
                            instruction=req.instruction, prompt_text=req.prompt_text,
                            notes=list(notes or []))
        if req.prompt_path and not self.uses_voice(req):
            out.prompt = self.validate_prompt(Path(req.prompt_path))
            out.notes.extend(out.prompt.notes)
        elif self.uses_voice(req):
            out.saved_voice = saved
            if req.prompt_path:
                out.notes.append(PROMPT_UNUSED_NOTE.format(mode=req.mode))
        return out

    def validate_prompt(self, path: Path) -> PromptAudio:
        """Validate a prompt recording at the engine's rate (cached by the file's hash)."""
        digest = _file_digest(path, self.limits.max_upload_bytes)
        file_key = (digest, self.sample_rate) if digest else None
        hit = self._validated.get(file_key) if file_key else None
        if hit is not None:
            return hit
        prompt = validate_prompt(path, self.limits, self.manager.get("vad"),
                                 target_sr=self.sample_rate,
                                 speakers=lambda: self.manager.get("speaker_encoder"))
        if file_key:
            self._validated.put(file_key, prompt)
        return prompt

    def prompt_profile(self, path: Path, transcript: str = "") -> tuple[PromptAudio, object]:
        """Validate a prompt and make what a saved voice stores for this engine (an engine
        that takes a transcript, such as CosyVoice, receives it too)."""
        if not self.capabilities.saved_voices:
            raise TextError(f"the {self.capabilities.name} engine does not take saved voices")
        prompt = self.validate_prompt(Path(path))
        return prompt, self.engine.voice_from_prompt(prompt, transcript)

    # ---- synthesis --------------------------------------------------------------------
    def stream(self, req: SynthesisRequest) -> Iterator[AudioChunk]:
        """Yield audio as soon as it is ready (errors raised up front): a chunk per sentence,
        or per piece of one where the engine streams within sentences (CosyVoice's token
        hops; the request is marked ``stream``).

        The chunks are cross-faded pieces joined by :class:`ChunkJoiner`: concatenated, they
        are :meth:`synthesize`'s samples exactly where the engine's pieces are its whole
        sentences cut up (the offline engine, but for a Kokoro voice's first sentence, which
        it speaks in pieces as they are made); CosyVoice's streamed hops are the runtime's
        streamed rendering (chunk-causal), a different one from its whole-sentence output.
        """
        with self.tracker.track(req.mode):
            view, notes = self.route(req)
            request = view._engine_request(req, notes)
            request.stream = True
            yield from view._joined(request, view.engine.synthesize(request))

    def _joined(self, request: EngineRequest, chunks) -> Iterator[AudioChunk]:
        """The engine's chunks through the joiner as they come (a sentence's first piece
        starts it, its final one ends it; pieces the joiner holds back entirely are not
        yielded); on completion the engine's latency, first-chunk time and LLM work go to
        the tracker (``/metrics``)."""
        joiner = ChunkJoiner(self.sample_rate)
        total = len(request.sentences)
        marks: list[tuple[float, float, str]] = []  # the sentence's word timings so far
        heard = 0  # samples of the sentence's pieces so far
        t0, first_s, tokens, llm_s = time.perf_counter(), None, 0, 0.0
        start, yielded = True, False
        for chunk in self.compute.iterate(chunks):
            if first_s is None:
                first_s = time.perf_counter() - t0
            tokens, llm_s = tokens + chunk.llm_tokens, llm_s + chunk.llm_s
            sentence = request.sentences[chunk.sentence]
            heard = 0 if start else heard
            marks = ([] if start else marks) + [(a + heard / self.sample_rate,
                                                 b + heard / self.sample_rate, w)
                                                for a, b, w in chunk.marks]
            heard += len(chunk.wav)
            wav = joiner.push(chunk.wav, last=chunk.sentence == total - 1,
                              pause_s=sentence.pause_after_s, breath=sentence.breath_after,
                              start=start, end=chunk.final)
            start = chunk.final
            if not chunk.final and not len(wav):
                continue
            notes = list(request.notes) if not yielded else []
            yielded = True
            timing: tuple = ()
            if chunk.final:  # the joiner has placed the whole sentence
                (on, off), origin = joiner.spans[-1], joiner.origins[-1] / self.sample_rate
                timing = (on / self.sample_rate, off / self.sample_rate,
                          [Cue(max(0.0, origin + a), max(0.0, origin + b), w)
                           for a, b, w in marks])
            yield AudioChunk(chunk.sentence, total, sentence.text, wav, self.sample_rate, notes,
                             chunk.final, *timing)
        elapsed = time.perf_counter() - t0
        self.tracker.observe_engine(self.capabilities.name, elapsed,
                                    elapsed if first_s is None else first_s, tokens, llm_s)

    def synthesize(self, req: SynthesisRequest, progress: ProgressFn | None = None
                   ) -> SynthesisResult:
        """Render every sentence, join them with short cross-fades, save a WAV in outputs/.

        Tracked (refused with a retryable BusyError while draining); a CUDA OOM frees
        memory and retries once before a clear ModelError.
        """
        with self.tracker.track(req.mode):
            view, notes = self.route(req)
            return call_with_oom_retry(lambda: view._synthesize(req, progress, notes))

    def _synthesize(self, req: SynthesisRequest, progress: ProgressFn | None,
                    notes: list[str]) -> SynthesisResult:
        t0 = time.perf_counter()
        request = self._engine_request(req, notes)
        pieces: list[np.ndarray] = []
        cues: list[Cue] = []
        words: list[Cue] = []
        sr = self.sample_rate
        for chunk in self._joined(request, self.engine.synthesize(request)):
            pieces.append(chunk.wav)
            if not chunk.final:
                continue
            cues.append(chunk.cue())
            words += chunk.words
            if progress is not None:
                progress((chunk.index + 1) / chunk.total,
                         f"sentence {chunk.index + 1}/{chunk.total}")
        wav = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        path = write_wav_atomic(self.output_path(req), wav, sr)
        cues = clamp_cues(cues, len(wav) / sr)
        try:
            write_beside(path, cues)  # outputs/<name>.srt and .vtt, the UI's downloads
        except OSError as e:  # the audio is saved; subtitles files are a convenience
            logger.warning("subtitles not written beside %s: %s", path.name, e)
        elapsed = time.perf_counter() - t0
        logger.info("synthesized %d sentences, %.2f s audio in %.2f s (%s)", len(cues),
                    len(wav) / sr, elapsed, req.mode)
        return SynthesisResult(wav, sr, path, elapsed, len(cues), request.notes, cues, words)

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
