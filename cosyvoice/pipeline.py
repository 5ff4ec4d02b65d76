"""The Synthesizer: text + mode + prompt → a stream of audio chunks, one per sentence.

Data flows one way: request → text checks, language runs and normalization → one acoustic
backend per run (Piper for English, FastSpeech2 + HiFi-GAN for Mandarin) → (voice adapter +
HiFi-GAN when cloning or when a sentence mixes backends) → chunks. Every model is reached
through the :class:`~cosyvoice.lifecycle.manager.ModelManager`; nothing here outlives a
request but the bounded voice-profile cache.
"""

from __future__ import annotations

import dataclasses
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

from cosyvoice.audio.io import resample, write_wav_atomic
from cosyvoice.errors import PromptError, TextError
from cosyvoice.frontend.en_normalize import clean_text, normalize_en
from cosyvoice.frontend.inline_tags import parse_inline
from cosyvoice.frontend.mixed import Run, split_mixed
from cosyvoice.frontend.sentences import split_sentences
from cosyvoice.frontend.text_checks import check_script, check_text
from cosyvoice.lifecycle.drain import RequestTracker
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.lifecycle.oom import call_with_oom_retry
from cosyvoice.settings import Settings
from cosyvoice.speaker.cache import LruCache, audio_key
from cosyvoice.speaker.validation import PromptAudio, PromptLimits, validate_prompt
from cosyvoice.voice.instruct import parse_instruction
from cosyvoice.voice.store import VoiceStore
from cosyvoice.voice.style import Style, load_emotion_rules, merge_controls

logger = logging.getLogger(__name__)

PROMPT_CACHE_SIZE = 8


def _file_digest(path: Path, max_bytes: int) -> str | None:
    """sha256 of the file's bytes; None where it cannot be read or is over ``max_bytes``
    (validation then says why)."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


MODES = ("preset", "clone", "cross_lingual", "instruct")
PROMPT_MODES = ("clone", "cross_lingual")  # a prompt recording is required
MODE_HELP = ("preset (a bundled or saved voice), clone (3-second cloning from a prompt), "
             "cross_lingual (a prompt in one language speaking text in another), "
             "instruct (an instruction such as \"speak happily\" / \"用四川话说\", "
             "with or without a prompt)")
PRESET_VOICES = {
    "joe": ("acoustic_en", "English · male (Piper en_US-joe-medium)"),
    "baker": ("acoustic_zh", "Mandarin · female (Baker FastSpeech2, non-commercial)"),
}
BACKENDS = {"en": "acoustic_en", "zh": "acoustic_zh"}  # run language → acoustic model
RUN_PAUSE_S = 0.1  # between language runs inside a sentence
RUN_EDGE_S = 0.03  # silence kept at a run's joined edges
# Sentence joining: each sentence keeps SENTENCE_EDGE_S of its own silence at the sides
# that meet another sentence (OUTPUT_EDGE_S at the output's outer edges), and neighbours
# overlap by CROSSFADE_S with an equal-power (cos/sin) cross-fade, so no hard cut clicks.
CROSSFADE_S = 0.03
SENTENCE_EDGE_S = 0.08
OUTPUT_EDGE_S = 0.01
# A first Chinese sentence longer than this is split at its first clause break (，、；:：) so
# that a stream's first chunk is short and playback starts sooner.
FIRST_CHUNK_CHARS = 12
_CLAUSE_BREAK = re.compile(r"[，、；,;：:]+")
_SENTENCE_END = re.compile(r"[.!?。！？…][\"'”’)）]*\s*$")
# <strong>…</strong>: emphasis as English and Mandarin mark it acoustically — a higher,
# wider pitch excursion, more energy and a slower, longer word (e.g. Xu & Xu 2005,
# "Phonetic realization of focus in English declarative intonation"; Chen & Gussenhoven
# 2008 for Mandarin focus), plus the short phrase break that join_runs puts around it.
EMPHASIS = Style(pitch_st=2.0, range_factor=1.3, gain_db=3.0)
EMPHASIS_RATE = 0.88
SPEED_RANGE = (0.5, 2.0)
STRENGTH_RANGE = (0.0, 1.0)
SEED_MAX = 2**31 - 1
# Read once per preset voice to measure its profile (F0 median and range, formants,
# spectral envelope): the adapter's "source" side. One fixed passage, so a request's
# adaptation never depends on what was synthesized before it.
CALIBRATION_TEXT = ("The birch canoe slid on the smooth planks. Glue the sheet to the dark "
                    "blue background. It is easy to tell the depth of a well. These days a "
                    "chicken leg is a rare dish. Rice is often served in round bowls.")
CALIBRATION_TEXTS = {
    "acoustic_en": CALIBRATION_TEXT,
    "acoustic_zh": ("今天早上天气很好，我们一起去公园散步。他每天都坐公共汽车去上班。"
                    "这本书讲的是一个关于友谊的故事。请把桌子上的杯子递给我。"),
}

ProgressFn = Callable[[float, str], None]


@dataclass
class SynthesisRequest:
    """What a user asked for. ``seed`` None means a fresh random rendering."""

    text: str
    mode: str = "preset"
    voice: str = "joe"
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


@dataclass
class _Sentence:
    """A sentence as typed (for the chunk) and its normalized language runs."""

    text: str
    runs: list[Run]
    emphasis: list[bool] = field(default_factory=list)  # per run; missing entries: False
    pause_after_s: float = 0.0  # an inline [pause]/[breath] after the sentence
    breath_after: bool = False


@dataclass
class _Plan:
    sentences: list[_Sentence]
    prompt: PromptAudio | None
    target_profile: object | None
    notes: list[str]
    style: Style | None = None  # what the instruction asks (None: no instruction)
    speed: float = 1.0  # the request's speed × the style's rate, clamped


class Synthesizer:
    """Turns :class:`SynthesisRequest` into audio using models from the manager."""

    def __init__(self, manager: ModelManager, settings: Settings,
                 tracker: RequestTracker | None = None) -> None:
        self.manager = manager
        self.settings = settings
        self.tracker = tracker or RequestTracker()  # in-flight count, drain refusal, stats
        self.limits = PromptLimits.from_settings(settings)
        self._profiles = LruCache(settings.profile_cache_size)
        # file bytes' sha256 → (validated PromptAudio, profile): a repeated prompt skips
        # decoding, VAD and trimming (0.054 s of a 1.96 s clone request on 2 Zen 2 cores).
        # Few entries: each holds up to 30 s of audio (2.6 MB).
        self._validated = LruCache(PROMPT_CACHE_SIZE)
        self._source_profiles: dict[str, object] = {}  # acoustic model name → profile
        self.voices = VoiceStore.for_settings(settings, reserved=tuple(PRESET_VOICES))
        self.emotion_rules = load_emotion_rules(settings.emotion_rules)

    @property
    def sample_rate(self) -> int:
        """Output rate: the vocoder's, so preset and cloned audio match."""
        return int(self.manager.get("vocoder").sample_rate)

    # ---- request checking -------------------------------------------------------------
    def check(self, req: SynthesisRequest) -> None:
        """Validate the cheap fields; raises TextError / PromptError with a clear message."""
        if req.mode not in MODES:
            raise TextError(f"unknown mode {req.mode!r}; choose one of: {MODE_HELP}")
        _check_range("speed", req.speed, SPEED_RANGE)
        _check_range("similarity strength", req.strength, STRENGTH_RANGE)
        if req.seed is not None and not (0 <= int(req.seed) <= SEED_MAX):
            raise TextError(f"seed must be between 0 and {SEED_MAX}, or empty for random")
        if (uses_voice(req) and req.voice not in PRESET_VOICES
                and self.voices.find(req.voice) is None):
            raise TextError(f"unknown voice {req.voice!r}; available: "
                            f"{', '.join([*PRESET_VOICES, *self.voices.names()])}")
        if req.mode in PROMPT_MODES and not req.prompt_path:
            what = "3-second cloning" if req.mode == "clone" else "cross-lingual cloning"
            raise PromptError(f"{what} needs a prompt recording: upload or record 3–30 s of "
                              "clear speech")
        if req.mode == "instruct" and not req.instruction.strip():
            raise TextError("instruct mode needs an instruction, e.g. \"speak happily and a bit "
                            "faster\" or \"用四川话说这句话\" / 自然语言控制需要填写指令")

    def _sentences(self, text: str) -> list[_Sentence]:
        """Sentences with their language runs: English text as before; Chinese and mixed
        text split into zh/en runs (digits and units by their neighbours)."""
        segments = parse_inline(text or "")  # plain text: one segment, no pauses
        # Check the text the user means: without its inline tags.
        text = check_text(" ".join(seg.text for seg in segments), self.settings.max_text_chars)
        script = check_script(text)
        main = main_language(text)

        def runs_of(s: str) -> list[Run]:
            if script == "en":
                runs = [Run("en", normalize_en(s))]
            else:
                runs = split_mixed(s, normalize=True, default=main)
            return [r for r in runs if re.search(r"\w", r.text)]

        out: list[_Sentence] = []
        closed = True  # whether the last sentence ended (punctuation or a pause)
        for seg in segments:
            for j, s in enumerate(split_sentences(clean_text(seg.text)) if
                                  re.search(r"\w", seg.text) else []):
                runs = runs_of(s)
                if not runs:
                    continue
                flags = [seg.emphasis] * len(runs)
                if j == 0 and not closed and out:  # an emphasis inside a sentence
                    last = out[-1]
                    last.emphasis = _flags(last) + flags
                    last.runs, last.text = last.runs + runs, f"{last.text} {s}"
                else:
                    out.append(_Sentence(s, runs, flags))
                closed = bool(_SENTENCE_END.search(s))
            if seg.pause_after_s and out:
                out[-1].pause_after_s += seg.pause_after_s
                out[-1].breath_after |= seg.breath_after
                closed = True
        if not out:
            raise TextError("The text has no speakable words (only symbols or punctuation)")
        return _short_first(out)

    def _plan(self, req: SynthesisRequest) -> _Plan:
        self.check(req)
        sentences = self._sentences(req.text)
        prompt = profile = None
        notes: list[str] = []
        if clones(req):
            prompt, profile = self._prompt_profile(Path(req.prompt_path))
            notes.extend(prompt.notes)
            if (req.mode == "cross_lingual" and req.prompt_text.strip()
                    and main_language(req.prompt_text) == main_language(req.text)):
                notes.append("the prompt's transcript and the text are in the same language: "
                             "cross-lingual cloning works like 3-second cloning here")
        elif req.voice not in PRESET_VOICES:  # a saved voice: clone from its stored profile
            profile = self.voices.get(req.voice).profile
        plan = _Plan(sentences, prompt, profile, notes, speed=float(req.speed))
        if req.instruction.strip():
            self._plan_style(req, plan)
        return plan

    def _plan_style(self, req: SynthesisRequest, plan: _Plan) -> None:
        """Parse the instruction into ``plan.style`` (its messages into the notes); check a
        dialect up front so an unsupported one is refused before any audio is made."""
        ins = parse_instruction(req.instruction)
        if ins.unknown and not ins.understood:
            words = ", ".join(ins.unknown)
            raise TextError(f"instruction not understood: {words} / 未能理解指令：{words}. Try "
                            "e.g. \"speak happily and a bit faster\", \"悲伤地朗读\", "
                            "\"语速 1.5 倍\", \"higher pitch\", \"用四川话说\"")
        plan.notes.extend(ins.messages())
        style = Style.from_instruction(ins, self.emotion_rules)
        if style.dialect is not None:
            if not any(r.lang == "zh" for s in plan.sentences for r in s.runs):
                plan.notes.append("dialect applies to Chinese text only / 方言只作用于中文文本")
                style = dataclasses.replace(style, dialect=None)
            else:
                _dialects().dialect_controls(style.dialect)  # raises if it cannot be spoken
        speed = float(req.speed) * style.rate
        lo, hi = SPEED_RANGE
        if not lo <= speed <= hi:
            plan.notes.append(f"speed {speed:.2f} (speed × instruction) is outside {lo}–{hi}; "
                              f"using {min(max(speed, lo), hi)} / 语速超出范围，已调整")
            speed = min(max(speed, lo), hi)
        plan.style, plan.speed = style, speed

    def prompt_profile(self, path: Path) -> tuple[PromptAudio, object]:
        """Validate a prompt and measure its voice profile, as clone mode does (to save it)."""
        return self._prompt_profile(Path(path))

    def _prompt_profile(self, path: Path) -> tuple[PromptAudio, object]:
        from cosyvoice.voice.profile import VoiceProfile

        file_key = _file_digest(path, self.limits.max_upload_bytes)
        hit = self._validated.get(file_key) if file_key else None
        if hit is not None:
            return hit
        prompt = validate_prompt(path, self.limits, self.manager.get("vad"),
                                 target_sr=self.sample_rate,
                                 speakers=lambda: self.manager.get("speaker_encoder"))
        key = audio_key(prompt.wav, prompt.sr)
        profile = self._profiles.get(key)
        if profile is None:
            profile = VoiceProfile.from_audio(prompt.wav, prompt.sr)
            self._profiles.put(key, profile)
        if file_key:
            self._validated.put(file_key, (prompt, profile))
        return prompt, profile

    # ---- synthesis --------------------------------------------------------------------
    def stream(self, req: SynthesisRequest) -> Iterator[AudioChunk]:
        """Yield one chunk per sentence as soon as it is ready (errors raised up front).

        The chunks are the cross-faded pieces of :meth:`synthesize`'s output (see
        :class:`ChunkJoiner`): concatenated, they are its samples exactly.
        """
        with self.tracker.track(req.mode):
            plan = self._plan(req)
            yield from self._joined(req, plan)

    def _joined(self, req: SynthesisRequest, plan: _Plan) -> Iterator[AudioChunk]:
        joiner = ChunkJoiner(self.sample_rate)
        for chunk in self._render(req, plan):
            sentence = plan.sentences[chunk.index]
            chunk.wav = joiner.push(chunk.wav, last=chunk.index == chunk.total - 1,
                                    pause_s=sentence.pause_after_s,
                                    breath=sentence.breath_after)
            if chunk.index == 0:
                chunk.notes = list(plan.notes)
            yield chunk

    def _render(self, req: SynthesisRequest, plan: _Plan) -> Iterator[AudioChunk]:
        """One chunk per sentence; each language run spoken by its backend.

        Clone mode: every run is moved by the adapter from its backend's profile toward the
        prompt's. Preset mode: runs in the voice's own language come straight from its
        backend; a run in another language (Piper inside a Baker sentence, Baker inside a
        Joe sentence) is moved toward the preset voice's profile, and so is every run of a
        sentence that mixes backends, so that the sentence sounds like one speaker.
        """
        sr_out = self.sample_rate
        total = len(plan.sentences)
        # A saved voice (not in PRESET_VOICES) carries its own target profile.
        voice = PRESET_VOICES.get(req.voice, (None,))[0] if uses_voice(req) else None
        adapter = self._adapter()
        for i, sentence in enumerate(plan.sentences):
            names = [BACKENDS[r.lang] for r in sentence.runs]
            pieces = []
            emphasis = _flags(sentence)
            for k, (run, name) in enumerate(zip(sentence.runs, names, strict=True)):
                speed = plan.speed
                if emphasis[k]:
                    speed = min(max(speed * EMPHASIS_RATE, SPEED_RANGE[0]), SPEED_RANGE[1])
                wav, sr = self._speak(name, run.text, speed, _sentence_seed(req, i),
                                      plan.style)
                if plan.target_profile is not None:
                    target, strength = plan.target_profile, req.strength
                elif voice is not None and (name != voice or len(set(names)) > 1):
                    target, strength = self._source_profile(voice, adapter), 1.0
                else:
                    target = None
                if target is not None:
                    source = self._source_profile(name, adapter)
                    wav, sr = adapter.adapt(wav, sr, source, target, strength)
                if plan.style is not None:  # Mandarin runs got F0 from the model's scalars
                    wav = plan.style.post(wav, sr, pitch_done=run.lang == "zh")
                if emphasis[k]:
                    wav = EMPHASIS.post(wav, sr)
                pieces.append(resample(wav, sr, sr_out))
            wav = join_runs(pieces, sr_out) if len(pieces) > 1 else pieces[0]
            yield AudioChunk(i, total, sentence.text, wav, sr_out)

    def _speak(self, name: str, text: str, speed: float, seed: int | None,
               style: Style | None = None) -> tuple[np.ndarray, int]:
        """One run through backend ``name``; Mandarin renders through the serving vocoder,
        with the style's F0 scalars and its dialect's tones."""
        acoustic = self.manager.get(name)
        if getattr(acoustic, "language", "") == "zh":
            vocoder = self.manager.get("vocoder")
            controls = style.mandarin_controls() if style is not None else None
            dialect = style.dialect if style is not None else None
            if dialect is not None:
                out = _speak_dialect(acoustic, text, dialect, speed, controls, vocoder)
            else:
                out = acoustic.synthesize(text, speed=speed, seed=seed, vocoder=vocoder,
                                          controls=controls)
        else:
            out = acoustic.synthesize(text, speed=speed, seed=seed)
        return out.wav, out.sample_rate

    def _adapter(self):
        """A VoiceAdapter for this request, bound to the vocoder that serves now.

        Built per request (cheap: a mel filterbank) so that no long-lived object keeps an
        unloaded or replaced vocoder alive.
        """
        from cosyvoice.audio.mel import MelAnalyzer
        from cosyvoice.voice.adapter import VoiceAdapter

        vocoder = self.manager.get("vocoder")
        return VoiceAdapter(vocoder, MelAnalyzer(vocoder.mel_config, device=vocoder.device))

    def _source_profile(self, name: str, adapter):
        """The profile of backend ``name``, measured once on its CALIBRATION_TEXTS passage."""
        from cosyvoice.voice.profile import VoiceProfile

        profile = self._source_profiles.get(name)
        if profile is None:
            wav, sr = self._speak(name, CALIBRATION_TEXTS[name], 1.0, 0)
            profile = VoiceProfile.from_audio(wav, sr, adapter.mel)
            self._source_profiles[name] = profile
            logger.info("measured the source profile of %s (F0 median %.0f Hz)", name,
                        profile.f0_median_hz)
        return profile

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
        plan = self._plan(req)
        pieces: list[np.ndarray] = []
        sr = self.sample_rate
        for chunk in self._joined(req, plan):
            pieces.append(chunk.wav)
            if progress is not None:
                progress((chunk.index + 1) / chunk.total,
                         f"sentence {chunk.index + 1}/{chunk.total}")
        wav = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        path = write_wav_atomic(self.output_path(req), wav, sr)
        elapsed = time.perf_counter() - t0
        logger.info("synthesized %d sentences, %.2f s audio in %.2f s (%s)", len(pieces),
                    len(wav) / sr, elapsed, req.mode)
        return SynthesisResult(wav, sr, path, elapsed, len(pieces), plan.notes)

    def output_path(self, req: SynthesisRequest) -> Path:
        """``outputs/20261202-183501_clone_hello-world-this_ab12cd.wav``"""
        words = re.findall(r"[A-Za-z0-9]+", req.text.lower())[:4]
        slug = "-".join(words)[:40] or "speech"
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        name = f"{stamp}_{req.mode}_{slug}_{uuid.uuid4().hex[:6]}.wav"
        return Path(self.settings.outputs_dir) / name


def join_chunks(pieces: list[np.ndarray], sr: int, pause_s: float = 0.12) -> np.ndarray:
    """Concatenate sentences with a short silence between them."""
    if not pieces:
        return np.zeros(0, np.float32)
    gap = np.zeros(int(pause_s * sr), np.float32)
    out: list[np.ndarray] = []
    for i, p in enumerate(pieces):
        if i:
            out.append(gap)
        out.append(p.astype(np.float32, copy=False))
    return np.concatenate(out)


class ChunkJoiner:
    """Joins sentence chunks as they arrive, so streamed and saved audio are identical.

    Each pushed chunk ``(T,)`` has its silent edges trimmed (``edge_s`` kept where it meets
    a neighbour, ``outer_s`` at the output's start and end). Its last ``fade_s`` is held
    back and mixed with the next chunk's first samples by an equal-power cross-fade
    (``cos``/``sin`` gains, whose squares sum to 1); :meth:`push` returns what is final.
    """

    def __init__(self, sr: int, fade_s: float = CROSSFADE_S, edge_s: float = SENTENCE_EDGE_S,
                 outer_s: float = OUTPUT_EDGE_S) -> None:
        self.sr, self.fade = sr, max(1, int(round(fade_s * sr)))
        self.edge_s, self.outer_s = edge_s, outer_s
        self._tail: np.ndarray | None = None  # held back from the previous chunk

    def push(self, wav: np.ndarray, last: bool = False, pause_s: float = 0.0,
             breath: bool = False) -> np.ndarray:
        """``pause_s``: an inline pause after this chunk (the silence between it and the
        next then lasts about ``pause_s``); ``breath``: with a soft breath noise in it."""
        first = self._tail is None
        body = _trim_edges(np.asarray(wav, np.float32), self.sr,
                           self.outer_s if first else self.edge_s,
                           keep_end_s=self.outer_s if last else self.edge_s)
        if pause_s > 0 and not last:
            gap = int(round(max(0.0, pause_s - 2 * self.edge_s) * self.sr))
            body = np.concatenate([body, breath_noise(gap, self.sr) if breath
                                   else np.zeros(gap, np.float32)])
        out: list[np.ndarray] = []
        if self._tail is not None:
            tail = self._tail
            n = min(len(tail), len(body))
            out.append(tail[: len(tail) - n])
            if n:
                theta = (np.arange(n, dtype=np.float64) + 0.5) * (np.pi / 2 / n)
                mixed = tail[len(tail) - n:] * np.cos(theta) + body[:n] * np.sin(theta)
                out.append(mixed.astype(np.float32))
            body = body[n:]
        hold = 0 if last else min(self.fade, len(body))
        out.append(body[: len(body) - hold])
        self._tail = body[len(body) - hold:] if not last else None
        return np.concatenate(out) if out else np.zeros(0, np.float32)


def join_runs(pieces: list[np.ndarray], sr: int, pause_s: float = RUN_PAUSE_S,
              edge_s: float = RUN_EDGE_S) -> np.ndarray:
    """Join the language runs of one sentence: each run's silent edges are cut to
    ``edge_s`` and a ``pause_s`` silence goes between runs (a short phrase break)."""
    trimmed = [_trim_edges(p, sr, edge_s) for p in pieces]
    return join_chunks([t for t in trimmed if len(t)], sr, pause_s)


def _trim_edges(wav: np.ndarray, sr: int, keep_s: float, floor_db: float = -40.0,
                keep_end_s: float | None = None) -> np.ndarray:
    """Cut leading/trailing audio quieter than ``floor_db`` below the peak (10 ms frames),
    keeping ``keep_s`` before the first loud frame and ``keep_end_s`` (default the same)
    after the last."""
    hop = max(1, int(0.01 * sr))
    n = len(wav) // hop
    if n == 0:
        return wav
    rms = np.sqrt(np.mean(wav[: n * hop].reshape(n, hop) ** 2, axis=1) + 1e-12)
    loud = np.flatnonzero(20 * np.log10(rms / max(float(rms.max()), 1e-9)) > floor_db)
    if not len(loud):
        return wav
    keep = int(keep_s * sr)
    keep_end = keep if keep_end_s is None else int(keep_end_s * sr)
    return wav[max(0, loud[0] * hop - keep): min(len(wav), (loud[-1] + 1) * hop + keep_end)]


def _short_first(sentences: list[_Sentence]) -> list[_Sentence]:
    """Split a long first sentence after its first clause break (，、；,;:：), so a stream's
    first chunk is short; the split only applies when both parts stay speakable."""
    first = sentences[0]
    if (len(first.runs) != 1 or first.runs[0].lang != "zh"
            or len(first.text) <= FIRST_CHUNK_CHARS):
        return sentences
    run = first.runs[0]
    raw_breaks = list(_CLAUSE_BREAK.finditer(first.text))
    for k, m in enumerate(_CLAUSE_BREAK.finditer(run.text)):
        head, rest = run.text[: m.end()].strip(), run.text[m.end():].strip()
        if len(re.findall(r"\w", head)) >= 2 and re.search(r"\w", rest):
            cut = raw_breaks[k].end() if k < len(raw_breaks) else len(first.text)
            return [_Sentence(first.text[:cut].strip() or head, [Run(run.lang, head)],
                              first.emphasis[:1]),
                    _Sentence(first.text[cut:].strip() or rest, [Run(run.lang, rest)],
                              first.emphasis[:1], first.pause_after_s, first.breath_after),
                    *sentences[1:]]
    return sentences


def _flags(sentence: _Sentence) -> list[bool]:
    """Per-run emphasis of ``sentence``, one flag per run."""
    flags = list(sentence.emphasis[: len(sentence.runs)])
    return flags + [False] * (len(sentence.runs) - len(flags))


def breath_noise(n: int, sr: int) -> np.ndarray:
    """``n`` samples of a soft inhalation: band-limited noise (≈ 0.4–2.5 kHz, where breath
    noise has its energy) under a raised-cosine swell, peaking near −38 dBFS, between short
    silences. Seeded, so the same text gives the same audio."""
    out = np.zeros(n, np.float32)
    body = int(0.6 * n)
    if body < int(0.05 * sr):
        return out
    rng = np.random.default_rng(1234)
    spec = np.fft.rfft(rng.standard_normal(body))
    freqs = np.fft.rfftfreq(body, 1.0 / sr)
    spec[(freqs < 400) | (freqs > 2500)] = 0
    noise = np.fft.irfft(spec, body)
    noise *= np.hanning(body) / max(float(np.abs(noise).max()), 1e-9)
    start = (n - body) // 2
    out[start:start + body] = (noise * 10 ** (-38 / 20)).astype(np.float32)
    return out


def main_language(text: str) -> str:
    """"zh" when the text has at least as many hanzi as Latin words, else "en"."""
    hanzi = len(re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]", text))
    words = len(re.findall(r"[A-Za-z]+", text))
    return "zh" if hanzi and hanzi >= words else "en"


def _dialects():
    """The dialect module (a colleague's; guarded so this file works before it lands)."""
    try:
        from cosyvoice.voice import dialects
    except ImportError as e:
        raise TextError("dialects are not available yet in this build / 此版本暂不支持方言"
                        ) from e
    return dialects


def _speak_dialect(acoustic, text: str, key: str, speed: float, controls, vocoder):
    """Mandarin with dialect ``key``'s tones; ``controls`` (an emotion's scalars) merged."""
    dialects = _dialects()
    render = getattr(dialects, "render_dialect", None)
    if render is not None:  # tone phones + exact contours (PSOLA), emotion scalars kept
        return render(acoustic, text, key, speed=speed, controls=controls, vocoder=vocoder)
    merged = merge_controls(controls, dialects.dialect_controls(key))
    return acoustic.synthesize(text, speed=speed, vocoder=vocoder, controls=merged)


def clones(req: SynthesisRequest) -> bool:
    """Whether the request clones a prompt recording (clone, cross_lingual, instruct+prompt)."""
    return req.mode in PROMPT_MODES or (req.mode == "instruct" and bool(req.prompt_path))


def uses_voice(req: SynthesisRequest) -> bool:
    """Whether ``req.voice`` (a preset or saved voice) speaks: preset, instruct w/o prompt."""
    return req.mode == "preset" or (req.mode == "instruct" and not req.prompt_path)


def _sentence_seed(req: SynthesisRequest, index: int) -> int | None:
    return None if req.seed is None else int(req.seed) + index


def _check_range(name: str, value: float, bounds: tuple[float, float]) -> None:
    try:
        v = float(value)
    except (TypeError, ValueError) as e:
        raise TextError(f"{name} must be a number between {bounds[0]} and {bounds[1]}") from e
    if not (bounds[0] <= v <= bounds[1]) or v != v:
        raise TextError(f"{name} is {value}; it must be between {bounds[0]} and {bounds[1]}")

