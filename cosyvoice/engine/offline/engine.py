"""The offline engine: each language run spoken by its backend, moved toward a target
voice by the adapter, styled by an instruction, all rendered through one HiFi-GAN.

The engine owns the vocoder: backends that end in a mel (Mandarin) and the voice adapter
reach it only through :meth:`OfflineEngine._vocode`. Models come from the ModelManager on
every call, so a reload or unload never leaves the engine holding a stale one.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosyvoice.acoustic.base import to_audio
from cosyvoice.audio.io import resample
from cosyvoice.audio.join import join_runs, trim_bounds
from cosyvoice.engine.base import SPEED_RANGE, EngineChunk, EngineRequest
from cosyvoice.engine.offline import (
    CAPABILITIES,
    KOKORO,
    PRESET_VOICES,
    configured,
    voice_space_file,
)
from cosyvoice.errors import ModelError, TextError
from cosyvoice.files import write_json_atomic
from cosyvoice.frontend.plan import main_language, run_parts
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.prosody.instruct import parse_instruction
from cosyvoice.prosody.style import Style, load_emotion_rules
from cosyvoice.settings import Settings
from cosyvoice.speaker.cache import LruCache, audio_key
from cosyvoice.speaker.validation import PromptAudio
from cosyvoice.state_files import read_json
from cosyvoice.voice.blend import is_blend_spec
from cosyvoice.voice.space import PromptVoice

logger = logging.getLogger(__name__)

BACKENDS = {"en": "acoustic_en", "zh": "acoustic_zh"}  # run language → acoustic model
# <strong>…</strong>: emphasis as English and Mandarin mark it acoustically — a higher,
# wider pitch excursion, more energy and a slower, longer word (e.g. Xu & Xu 2005,
# "Phonetic realization of focus in English declarative intonation"; Chen & Gussenhoven
# 2008 for Mandarin focus), plus the short phrase break that join_runs puts around it.
EMPHASIS = Style(pitch_st=2.0, range_factor=1.3, gain_db=3.0)
EMPHASIS_RATE = 0.88
# Read once per backend at load to measure its voice profile (F0 median and range,
# formants, spectral envelope): the adapter's "source" side. Fixed passages, already
# normalized and cut to what each backend speaks at once, so a request's adaptation never
# depends on what was synthesized before it.
CALIBRATION_PARTS = {
    "acoustic_en": ("The birch canoe slid on the smooth planks. Glue the sheet to the dark "
                    "blue background. It is easy to tell the depth of a well. These days a "
                    "chicken leg is a rare dish. Rice is often served in round bowls.",),
    "acoustic_zh": ("今天早上天气很好，我们一起去公园散步。", "他每天都坐公共汽车去上班。",
                    "这本书讲的是一个关于友谊的故事。", "请把桌子上的杯子递给我。"),
}
NO_SPACE_NOTE = ("Kokoro's voice space is not measured for the installed weights yet (setup "
                 "measures it in the background: logs/voice_space.log), so this clone uses the "
                 "joe/baker voice moved by the adapter / 已安装权重的 Kokoro 音色空间尚未测量"
                 "（安装程序正在后台测量：logs/voice_space.log），"
                 "本次克隆使用 joe/baker 加音色适配")
# Streaming a first sentence in pieces (OfflineEngine._render_pieces): the silence kept at
# each side of a cut after a clause's punctuation (a comma's pause of ~0.1 s: Kokoro's own
# at a comma measured 0.01–0.26 s) and at a cut between two words (no pause).
CUT_EDGE_S = 0.05
WORD_EDGE_S = 0.01
CUT_MARKS = set(".!?;:,—…")
SPACE_RECHECK_S = 30.0  # while no voice space matches, look for a newly measured one this often
OLD_SAVED_NOTE = ("this voice was saved before cloning from Kokoro's voices; it is spoken by "
                  "joe/baker moved by the adapter (save it again from its prompt to use "
                  "Kokoro) / 该音色保存于旧版本，使用 joe/baker 加音色适配")


@dataclass
class _Plan:
    target_profile: object | None
    kokoro_voice: str | None = None  # a Kokoro voice or blend speaks every run
    kokoro_pack: np.ndarray | None = None  # a fitted voice's style pack speaks every run
    # cloning v2: run language → (Kokoro blend spec, its profile: the adapter's source)
    clone_blends: dict[str, tuple[str, object]] | None = None
    style: Style | None = None  # what the instruction asks (None: no instruction)
    speed: float = 1.0  # the request's speed × the style's rate, clamped


class OfflineEngine:
    """The :class:`~cosyvoice.engine.base.Engine` of the embedded default chain."""

    capabilities = CAPABILITIES

    def __init__(self, manager: ModelManager, settings: Settings) -> None:
        self.manager = manager
        self._profiles = LruCache(settings.profile_cache_size)  # prompt audio → profile
        self._source_profiles: dict[str, object] = {}  # acoustic model name → profile
        self.emotion_rules = load_emotion_rules(settings.emotion_rules)
        self._settings = settings
        self.capabilities = configured(settings)  # cloning as these settings make it
        self._space = None  # Kokoro's voice space (None: none matches the weights yet)
        self._space_checked = -SPACE_RECHECK_S  # monotonic time of the last look

    # ---- voices -----------------------------------------------------------------------
    def voice_from_prompt(self, prompt: PromptAudio, prompt_text: str = "") -> PromptVoice:
        """The prompt's :class:`~cosyvoice.voice.space.PromptVoice` (cached by audio): its
        profile and, when Kokoro's voice space is measured, the blends of its nearest
        voices per language — what a saved voice stores."""
        from cosyvoice.voice.profile import VoiceProfile

        key = audio_key(prompt.wav, prompt.sr)
        voice = self._profiles.get(key)
        if voice is None or (voice.target is None and self.voice_space() is not None):
            # (a prompt placed before a voice space was found is placed again)
            profile = voice.profile if voice else VoiceProfile.from_audio(prompt.wav, prompt.sr)
            voice = PromptVoice(profile, self._locate(prompt))
            self._profiles.put(key, voice)
        return voice

    def _locate(self, prompt: PromptAudio):
        """The prompt's place in Kokoro's voice space (None without the space)."""
        from cosyvoice.voice.space import CloneTarget

        space = self.voice_space()
        if space is None:
            return None
        encoder = self.manager.get("speaker_encoder")
        return CloneTarget.locate(space, encoder.embed(prompt.wav, prompt.sr))

    def voice_space(self):
        """Kokoro's voice space for the installed weights: measured here, else shipped
        (:func:`~cosyvoice.voice.space.find_space`). None when Kokoro is absent, cloning v2
        is off, or none matches yet; then it is looked for again every
        :data:`SPACE_RECHECK_S` (setup measures a new one in the background)."""
        if self._space is None and self._settings.clone_space and _kokoro_installed():
            now = time.monotonic()
            if now - self._space_checked >= SPACE_RECHECK_S:
                self._space_checked = now
                from cosyvoice.voice.space import current_key, find_space

                self._space = find_space(voice_space_file(self._settings).parent,
                                         current_key())
        return self._space

    def fit_tools(self):
        """What a voice fit runs (:class:`~cosyvoice.voice.fit.FitTools`): the served Kokoro
        model, the GE2E encoder and Kokoro's voice space. ModelError saying why when this
        install cannot fit (no Kokoro, cloning v2 off, or the voice space not measured)."""
        from cosyvoice.voice.fit import FitTools

        if not (self._settings.clone_space and _kokoro_installed()):
            raise ModelError("fitting a voice needs Kokoro's voices and cloning v2 "
                             "(--clone-space); this install has neither / 拟合音色需要 Kokoro")
        space = self.voice_space()
        if space is None:
            raise ModelError("Kokoro's voice space is not measured for the installed weights "
                             "yet (setup measures it in the background: logs/voice_space.log); "
                             "a voice can be fitted once it is / Kokoro 音色空间尚未测量")
        return FitTools(self.manager.get(KOKORO), self.manager.get("speaker_encoder"), space)

    def warm(self) -> None:
        """Have each backend's source profile ready now (from ``models/optimized`` when an
        earlier start measured it with the same weights), so that no request pays for it."""
        for name in CALIBRATION_PARTS:
            self._source_profile(name)

    def _source_profile(self, name: str):
        """The profile of backend ``name``: measured once on its calibration passage and
        kept on disk, keyed by what the audio depends on (a hard restart reads it back)."""
        from cosyvoice.voice.profile import VoiceProfile

        profile = self._source_profiles.get(name)
        if profile is not None:
            return profile
        path = self._profile_file(name)
        profile = read_json(path, "source-profile cache", VoiceProfile.from_dict)
        if profile is None:  # missing, or damaged and set aside: measured again
            wav, sr, _ = self._speak(name, CALIBRATION_PARTS[name], 1.0, 0, None)
            profile = VoiceProfile.from_audio(wav, sr, self._adapter().mel)
            logger.info("measured the source profile of %s (F0 median %.0f Hz)", name,
                        profile.f0_median_hz)
            _write_json(path, profile.to_dict())
        self._source_profiles[name] = profile
        return profile

    def _profile_file(self, name: str) -> Path:
        from cosyvoice.engine.offline.models import calibration_identity

        key = calibration_identity(self._settings, self.manager.device)
        return Path(self._settings.models_dir) / "optimized" / f"source-profile-{name}-{key}.json"

    # ---- the entry point ----------------------------------------------------------------
    def synthesize(self, request: EngineRequest) -> Iterator[EngineChunk]:
        """Plan now (errors raised before any audio), then render sentence by sentence."""
        return self._render(request, self._plan(request))

    def _plan(self, req: EngineRequest) -> _Plan:
        voice = None
        if req.prompt is not None:
            voice = self.voice_from_prompt(req.prompt)
            if (req.mode == "cross_lingual" and req.prompt_text.strip()
                    and main_language(req.prompt_text) == _text_language(req)):
                req.notes.append("the prompt's transcript and the text are in the same "
                                 "language: cross-lingual cloning works like 3-second "
                                 "cloning here")
        elif getattr(req.saved_voice, "profile", None) is not None:  # clone a saved voice
            voice = PromptVoice(req.saved_voice.profile, req.saved_voice.clone)
        profile = voice.profile if voice is not None else None
        plan = _Plan(profile, speed=float(req.speed))
        if profile is None:
            saved_blend = getattr(req.saved_voice, "blend", None)
            if getattr(req.saved_voice, "fit", None) is not None:  # a fitted voice
                plan.kokoro_voice = f"fitted:{req.saved_voice.name}"
                plan.kokoro_pack = req.saved_voice.pack()  # checked: (510, 256), finite
            elif saved_blend is not None:
                plan.kokoro_voice = saved_blend.spec
            elif _is_kokoro(req.voice):
                plan.kokoro_voice = req.voice
        if req.instruction.strip():
            self._plan_style(req, plan)
        if voice is not None:
            self._plan_clone(req, plan, voice)
        return plan

    def _plan_clone(self, req: EngineRequest, plan: _Plan, voice: PromptVoice) -> None:
        """Cloning v2: each run spoken by the blend of the prompt's nearest Kokoro voices of
        its language, then moved by the adapter from the blend's profile at strength ×
        ``clone_adapter_scale`` (default 0: measured to lose on held-out clips). Otherwise (no
        Kokoro, cloning v2 off, a dialect asked for, no space or an old saved voice, with a
        note for the last two) the runs stay with joe/baker and the adapter."""
        if not (self._settings.clone_space and _kokoro_installed()):
            return
        if plan.style is not None and plan.style.dialect is not None:
            return  # dialects are Baker's
        space = self.voice_space()
        if space is None or voice.target is None:
            req.notes.append(NO_SPACE_NOTE if space is None else OLD_SAVED_NOTE)
            return
        langs = {run.lang for s in req.sentences for run in s.runs}
        blends = {lang: b for lang, b in voice.target.blends.items()
                  if lang in langs and all(n in space.points for n, _ in b.parts)}
        if set(blends) != langs:
            req.notes.append(NO_SPACE_NOTE)
            return
        plan.clone_blends = {lang: (b.spec, space.profile_of(b)) for lang, b in blends.items()}
        spoken = ", ".join(b.spec for b in blends.values())
        req.notes.append(f"cloned from Kokoro's nearest voices ({spoken}) / 克隆：由最接近的 "
                         f"Kokoro 音色混合（{spoken}）")

    def _plan_style(self, req: EngineRequest, plan: _Plan) -> None:
        """Parse the instruction into ``plan.style`` (its messages into the notes); check a
        dialect up front so an unsupported one is refused before any audio is made."""
        from cosyvoice.prosody.dialects import dialect_controls

        ins = parse_instruction(req.instruction)
        if ins.unknown and not ins.understood:
            words = ", ".join(ins.unknown)
            raise TextError(f"instruction not understood: {words} / 未能理解指令：{words}. Try "
                            "e.g. \"speak happily and a bit faster\", \"悲伤地朗读\", "
                            "\"语速 1.5 倍\", \"higher pitch\", \"用四川话说\"")
        req.notes.extend(ins.messages())
        style = Style.from_instruction(ins, self.emotion_rules)
        if style.dialect is not None:
            if not any("zh" in s.languages for s in req.sentences):
                req.notes.append("dialect applies to Chinese text only / 方言只作用于中文文本")
                style = dataclasses.replace(style, dialect=None)
            elif plan.kokoro_voice is not None:
                req.notes.append("dialects are spoken by the baker voice only; this Kokoro "
                                 "voice speaks Mandarin / 方言仅支持 baker 音色")
                style = dataclasses.replace(style, dialect=None)
            else:
                dialect_controls(style.dialect)  # raises if it cannot be spoken
        speed = float(req.speed) * style.rate
        lo, hi = SPEED_RANGE
        if not lo <= speed <= hi:
            req.notes.append(f"speed {speed:.2f} (speed × instruction) is outside {lo}–{hi}; "
                             f"using {min(max(speed, lo), hi)} / 语速超出范围，已调整")
            speed = min(max(speed, lo), hi)
        plan.style, plan.speed = style, speed

    # ---- rendering ----------------------------------------------------------------------
    def _render(self, req: EngineRequest, plan: _Plan) -> Iterator[EngineChunk]:
        """One chunk per sentence; each language run spoken by its backend.

        Cloning: every run is moved by the adapter toward the target's profile from its
        speaker's — the blend of the prompt's nearest Kokoro voices of the run's language
        (cloning v2, the blend's profile derived from its voices'), else joe/Baker's.
        A preset voice: runs in the voice's own language come straight from its backend; a
        run in another language (Piper inside a Baker sentence, Baker inside a Joe
        sentence) is moved toward the preset voice's profile, and so is every run of a
        sentence that mixes backends, so that the sentence sounds like one speaker. A
        Kokoro voice: every run is spoken by Kokoro, phonemized in its own language —
        English runs by the voice itself (as Kokoro's own pipeline reads English words in
        Mandarin), a Mandarin run of an English voice by a Mandarin Kokoro voice of the
        same gender (``KokoroModel.speaker``); no adapter, no HiFi-GAN, the 24 kHz audio
        only resampled. Streamed, a Kokoro voice's first sentence comes in pieces
        (:meth:`_render_pieces`).
        """
        sr_out = self.capabilities.sample_rate
        clone = plan.clone_blends
        kokoro = plan.kokoro_voice is not None or clone is not None
        voice = (PRESET_VOICES[req.voice][0] if plan.target_profile is None
                 and req.voice in PRESET_VOICES and not kokoro else None)
        adapter = self._adapter() if clone is not None or not kokoro else None
        for i, sentence in enumerate(req.sentences):
            if i == 0 and self._cuts(req, plan, sentence):
                yield from self._render_pieces(sentence, plan, sr_out)
                continue
            names = [KOKORO if kokoro else BACKENDS[r.lang] for r in sentence.runs]
            pieces, run_marks = [], []
            for run, name, emphasis in zip(sentence.runs, names, sentence.flags(), strict=True):
                speed = plan.speed
                if emphasis:
                    speed = min(max(speed * EMPHASIS_RATE, SPEED_RANGE[0]), SPEED_RANGE[1])
                seed = None if req.seed is None else int(req.seed) + i
                spoken = clone[run.lang][0] if clone is not None else plan.kokoro_voice
                run_marks.append([])
                wav, sr, pitch_done = self._speak(
                    name, run_parts(run, self.capabilities.part_chars), speed, seed,
                    plan.style, (spoken, run.lang) if kokoro else None, run.readings,
                    run_marks[-1], plan.kokoro_pack)
                # at the output rate before the style's gain and limiter: resampling after
                # them would overshoot the limit (Kokoro speaks at 24 kHz)
                wav, sr = resample(wav, sr, sr_out), sr_out
                if plan.target_profile is not None:
                    target, strength = plan.target_profile, req.strength
                    if clone is not None:  # held-out clips: the adapter loses (default 0)
                        strength *= self._settings.clone_adapter_scale
                        target = target if strength > 0.0 else None
                elif voice is not None and (name != voice or len(set(names)) > 1):
                    target, strength = self._source_profile(voice), 1.0
                else:
                    target = None
                if target is not None:
                    source = clone[run.lang][1] if clone else self._source_profile(name)
                    wav, sr = adapter.adapt(wav, sr, source, target, strength)
                if plan.style is not None:  # Mandarin runs got F0 from the model's scalars
                    wav = plan.style.post(wav, sr, pitch_done=pitch_done)
                if emphasis:
                    wav = EMPHASIS.post(wav, sr)
                pieces.append(resample(wav, sr, sr_out))  # a no-op unless the adapter changed it
            origins: list[int] = []
            wav = join_runs(pieces, sr_out, origins=origins) if len(pieces) > 1 else pieces[0]
            # the adapter, styles and resampling keep time: a mark moves with its run
            marks = [(a + o / sr_out, b + o / sr_out, w)
                     for o, ms in zip(origins or [0], run_marks, strict=True) for a, b, w in ms]
            yield EngineChunk(i, wav, marks=marks)

    @staticmethod
    def _cuts(req: EngineRequest, plan: _Plan, sentence) -> bool:
        """Whether a streamed request's first sentence is spoken in pieces as they are made
        (a Kokoro preset voice, one language run, no instruction or emphasis: nothing
        that works on the whole sentence's audio)."""
        return (req.stream and plan.kokoro_voice is not None and plan.clone_blends is None
                and plan.style is None and len(sentence.runs) == 1
                and not any(sentence.flags()))

    def _render_pieces(self, sentence, plan: _Plan, sr_out: int) -> Iterator[EngineChunk]:
        """The first sentence in pieces (:meth:`KokoroSpeaker.synthesize_pieces`): a short
        first one, so the stream starts early, and larger later ones; each yielded as soon
        as it is made. Where two pieces meet, their silent edges are cut to
        :data:`CUT_EDGE_S` (after a clause's punctuation) or :data:`WORD_EDGE_S` (inside
        a clause), so the cut sounds like a comma's pause or none; the sentence's outer
        edges are left to the joiner."""
        run = sentence.runs[0]
        speaker = self.manager.get(KOKORO).speaker(plan.kokoro_voice, run.lang,
                                                    plan.kokoro_pack)
        parts = run_parts(run, self.capabilities.part_chars)
        edge = 0.0  # the silence kept before this piece (0: the sentence's start)
        for p, part in enumerate(parts):
            for out, last in speaker.synthesize_pieces(part, plan.speed, run.readings):
                final = last and p == len(parts) - 1
                wav = resample(out.wav, out.sample_rate, sr_out)
                clause = "".join(out.phonemes).rstrip()[-1:] in CUT_MARKS
                keep_end = CUT_EDGE_S if clause else WORD_EDGE_S
                lo, hi = trim_bounds(wav, sr_out, edge, keep_end_s=keep_end)
                wav = wav[lo if edge else 0:len(wav) if final else hi]
                edge = keep_end
                yield EngineChunk(0, wav, final=final)

    def _speak(self, name: str, parts: list[str] | tuple[str, ...], speed: float,
               seed: int | None, style: Style | None,
               kokoro: tuple[str, str] | None = None,
               readings: dict | None = None,
               marks: list | None = None,
               pack: np.ndarray | None = None) -> tuple[np.ndarray, int, bool]:
        """One run through backend ``name``, part by part: ``(wav, rate, pitch applied)``.
        The style's acoustic controls (and its dialect's tones) go to every backend; one
        without per-phone controls ignores them and says so. ``kokoro``: (voice, run
        language) when ``name`` is the Kokoro model. ``readings``: the run's pronunciation
        overrides (every backend of this engine applies them in its G2P). ``marks``: gets
        the backend's syllable/word timings (seconds of the run's audio), where it has any.
        ``pack``: a fitted voice's style pack, which speaks every Kokoro run (English and
        Mandarin alike: the speaker's pitch stays, see docs/kokoro.md)."""
        acoustic = self.manager.get(name)
        if kokoro is not None:
            acoustic = acoustic.speaker(*kokoro, pack)
        controls = None
        if style is not None:
            controls = style.acoustic_controls()
            if style.dialect is not None:
                from cosyvoice.prosody.dialects import rendering_controls

                controls = rendering_controls(style.dialect, controls)
        pieces, sr, pitch_done = [], int(acoustic.sample_rate), False
        for part in parts:
            extra = {"readings": readings} if readings else {}
            out = acoustic.synthesize(part, speed=speed, seed=seed, controls=controls, **extra)
            if marks is not None:
                offset = sum(len(p) for p in pieces) / int(out.sample_rate)
                marks.extend((a + offset, b + offset, w) for a, b, w in out.marks)
            pieces.append(to_audio(out, self._vocode))
            sr, pitch_done = int(out.sample_rate), out.pitch_applied
        return np.concatenate(pieces), sr, pitch_done

    def _vocode(self, mel) -> np.ndarray:
        """The one place the offline chain runs its vocoder."""
        return self.manager.get("vocoder").vocode(mel)

    def _adapter(self):
        """A VoiceAdapter bound to the vocoder that serves now.

        Built per request (cheap: a mel filterbank) so that no long-lived object keeps an
        unloaded or replaced vocoder alive.
        """
        from cosyvoice.audio.mel import MelAnalyzer
        from cosyvoice.voice.adapter import VoiceAdapter

        vocoder = self.manager.get("vocoder")
        return VoiceAdapter(self._vocode, MelAnalyzer(vocoder.mel_config, device=vocoder.device))


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` atomically; a folder that takes no files only costs the cache."""
    try:
        write_json_atomic(path, data, indent=None, durable=False)
    except OSError as e:
        logger.warning("source profile not cached in %s: %s", path.parent, e)


def _kokoro_installed() -> bool:
    return any(model == KOKORO for model, _ in PRESET_VOICES.values())


def _is_kokoro(voice: str | None) -> bool:
    """A Kokoro preset voice, or a blend of them (the pipeline has checked the spec)."""
    if voice in PRESET_VOICES:
        return PRESET_VOICES[voice][0] == KOKORO
    return is_blend_spec(voice)


def _text_language(req: EngineRequest) -> str:
    return main_language(" ".join(s.text for s in req.sentences))
