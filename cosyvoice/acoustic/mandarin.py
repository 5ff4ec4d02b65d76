"""Mandarin backend: normalized Chinese → G2P → FastSpeech2 (Baker) → mel bridge → a mel
in the vocoder's space (the offline engine owns the vocoder and turns it into audio).

    zh = MandarinAcoustic.load(mel_config=vocoder.mel_config)
    out = zh.synthesize("今天天气很好。")            # AcousticOutput with a mel, no audio
    wav = to_audio(out, vocoder.vocode)            # (the engine does this)
    r = zh.render("妈妈骂马。", controls=ProsodyControls(f0=lambda ctx: ctx.f0 + 0.5))
    r.durations, r.syllables                        # per-phone frames, tone spans

Per-phoneme controls (:class:`ProsodyControls`) replace or reshape the model's predicted
durations (frames of 12.5 ms), F0 and energy (z-scored corpus units, as the decoder takes
them): each is ``None`` (the prediction), an array ``(N,)`` or a callable that receives a
:class:`ProsodyContext` (phones, syllables with tones, the predictions) and returns an
array ``(N,)``. Emotion and dialect tone contours plug in here: a dialect also swaps the
G2P's tones (``phones``) and reshapes the vocoded audio (``after``).

The model is deterministic, so ``seed`` changes nothing (accepted for the interface). Its
input is one sentence the frontend has normalized and cut to at most MAX_CHUNK_CHARS.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from cosyvoice.acoustic.base import AcousticOutput
from cosyvoice.acoustic.fastspeech2 import FastSpeech2Mandarin, predicted_durations
from cosyvoice.acoustic.zh_mel_bridge import MelBridge, ModelMelSpace
from cosyvoice.audio.mel import MelConfig
from cosyvoice.errors import TextError
from cosyvoice.frontend.pronunciation import Reading
from cosyvoice.frontend.zh_g2p import Syllable, ZhPhones, zh_to_phones

logger = logging.getLogger(__name__)

MAX_CHUNK_CHARS = 80  # ~16 s of speech; the model's positions end at 25.6 s


@dataclass
class ProsodyContext:
    """What a control callable sees: one sentence's phones and the model's predictions.

    ``durations`` (N,) int frames at the requested speed; ``f0`` / ``energy`` (N,) float in
    z-scored corpus units. ``syllables[i].start:end`` index into ``phones``.
    """

    phones: list[str]
    syllables: list[Syllable]
    durations: np.ndarray
    f0: np.ndarray
    energy: np.ndarray
    frame_seconds: float


Control = np.ndarray | list | Callable[[ProsodyContext], np.ndarray] | None


@dataclass
class ProsodyControls:
    """Per-phone overrides; see the module docstring. Scalars apply after overrides."""

    durations: Control = None
    f0: Control = None
    energy: Control = None
    pitch_scale: float = 1.0
    pitch_shift: float = 0.0
    energy_scale: float = 1.0
    # Mandarin tone → tone of the phone spoken instead (dialects: {2: 4} says every
    # 阳平 syllable is spoken with a tone-4 final). Syllables keep their Mandarin ``tone``,
    # so the other controls still see the tone category; tone 5 is never substituted.
    tone_map: dict[int, int] | None = None
    # Hooks (dialects): rewrite the G2P result before the model runs, and reshape the
    # vocoded audio ``(T,)`` of one sentence given its render, after the vocoder.
    phones: Callable[[ZhPhones], ZhPhones] | None = None
    after: Callable[[np.ndarray, int, MandarinRender], np.ndarray] | None = None

    @property
    def needs_prediction(self) -> bool:
        return any(callable(c) for c in (self.durations, self.f0, self.energy))


@dataclass
class MandarinRender:
    """One sentence: the vocoder-space mel and everything that made it."""

    text: str
    phones: list[str]
    syllables: list[Syllable]
    durations: np.ndarray  # (N,) model frames
    f0: np.ndarray  # (N,) as decoded
    energy: np.ndarray  # (N,)
    model_mel: np.ndarray  # (T, 80) FastSpeech2's normalized mel
    mel: np.ndarray  # (80, T') the vocoder's log mel
    frame_seconds: float
    wav: np.ndarray | None = None
    sample_rate: int = 0
    notes: list[str] = field(default_factory=list)


class MandarinAcoustic:
    """The :class:`~cosyvoice.acoustic.base.AcousticModel` for Mandarin: mels in the space
    of ``mel_config`` (the vocoder's), which the offline engine vocodes."""

    name = "mandarin-fastspeech2-baker"
    language = "zh"

    def __init__(self, model: FastSpeech2Mandarin, mel_config: MelConfig) -> None:
        self.model = model
        self.device = model.device
        self.mel_config = mel_config
        self._space = ModelMelSpace.from_fastspeech2(model.config)
        self._bridges: dict[tuple, MelBridge] = {}

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu", *,
             mel_config: MelConfig) -> MandarinAcoustic:
        return cls(FastSpeech2Mandarin.load(path, device=device), mel_config)

    @property
    def sample_rate(self) -> int:
        """The rate of the vocoder its mels are for (22.05 kHz for our HiFi-GAN)."""
        return int(self.mel_config.sample_rate)

    @property
    def frame_seconds(self) -> float:
        return self.model.config.frame_seconds

    def bridge(self, mel_config) -> MelBridge:
        key = tuple(sorted(mel_config.to_dict().items()))
        if key not in self._bridges:
            self._bridges[key] = MelBridge(self._space, mel_config)
        return self._bridges[key]

    # ---- frontend ---------------------------------------------------------------------
    def g2p(self, sentence: str, readings: Mapping[str, Reading] | None = None) -> ZhPhones:
        """Phones of one normalized sentence (the frontend normalized it already);
        ``readings``: pronunciation overrides of its words (spoken as given)."""
        if len(sentence) > MAX_CHUNK_CHARS:
            raise TextError(f"a Mandarin sentence of {len(sentence)} characters is over the "
                            f"model's {MAX_CHUNK_CHARS}; the frontend cuts longer ones")
        return zh_to_phones(sentence, normalize=False, symbols=self.model.config.symbols,
                            readings=readings)

    def phonemize(self, text: str) -> list[list[str]]:
        return [self.g2p(text).phones]

    # ---- acoustic model ---------------------------------------------------------------
    @torch.inference_mode()
    def _context(self, zh: ZhPhones, speed: float) -> ProsodyContext:
        ids = torch.tensor([zh.ids], device=self.device)
        hidden, mask = self.model.model.encode(ids)
        log_dur, f0, energy = self.model.model.predict(hidden, mask)
        dur = predicted_durations(log_dur, 1.0 / speed)
        return ProsodyContext(zh.phones, zh.syllables, dur[0].cpu().numpy(),
                              f0[0].float().cpu().numpy(), energy[0].float().cpu().numpy(),
                              self.frame_seconds)

    def render(self, sentence: str, speed: float = 1.0, controls: ProsodyControls | None = None,
               mel_config=None, readings: Mapping[str, Reading] | None = None) -> MandarinRender:
        """One sentence → model outputs and the mel for ``mel_config`` (default: this
        backend's). No audio: the engine vocodes."""
        zh = self.g2p(sentence, readings)
        if controls is not None and controls.phones is not None:
            zh = controls.phones(zh)
        return self.render_phones(zh, speed, controls, mel_config)

    def render_phones(self, zh: ZhPhones, speed: float = 1.0,
                      controls: ProsodyControls | None = None, mel_config=None) -> MandarinRender:
        """:meth:`render` from a G2P result (benchmarks build carrier phrases directly)."""
        controls = controls or ProsodyControls()
        if controls.tone_map:
            zh = substitute_tones(zh, controls.tone_map, self.model.config.symbols)
        ctx = self._context(zh, speed) if controls.needs_prediction else None
        values = {k: _resolve(getattr(controls, k), ctx, k)
                  for k in ("durations", "f0", "energy")}
        if values["durations"] is not None:
            values["durations"] = np.rint(values["durations"]).astype(np.int64)
        out = self.model.synthesize_ids(
            zh.ids, speed=speed, pitch_scale=controls.pitch_scale,
            pitch_shift=controls.pitch_shift, energy_scale=controls.energy_scale, **values)
        cfg = mel_config if mel_config is not None else self.mel_config
        model_mel = out.mel.numpy()
        return MandarinRender(zh.text, zh.phones, zh.syllables, out.durations.numpy(),
                              out.f0.numpy(), out.energy.numpy(), model_mel,
                              self.bridge(cfg)(model_mel), self.frame_seconds)

    def synthesize(self, text: str, speed: float = 1.0, seed: int | None = None,
                   controls: ProsodyControls | None = None,
                   readings: Mapping[str, Reading] | None = None) -> AcousticOutput:
        """One normalized sentence at ``speed`` (0.5–2.0) → its mel; ``controls`` shape
        the prosody (emotion scalars, dialect tones) and may reshape the audio after the
        vocoder (``controls.after``); ``readings``: pronunciation overrides."""
        r = self.render(text, speed, controls, readings=readings)
        after = controls.after if controls is not None else None
        finish = None if after is None else (lambda wav: after(wav, self.sample_rate, r))
        return AcousticOutput(wav=None, sample_rate=self.sample_rate, phonemes=list(r.phones),
                              mel=r.mel, finish=finish, pitch_applied=True,
                              marks=syllable_marks(r))

    def warm(self) -> None:
        """Run the network once (first-call allocations) without needing a vocoder."""
        self.model.synthesize_ids(self.g2p("你好。").ids)


def syllable_marks(r: MandarinRender) -> list[tuple[float, float, str]]:
    """Each syllable's ``(start_s, end_s, hanzi)`` from the phone durations the model used
    (the vocoder-space mel keeps the model's time in seconds). A syllable lasts until the
    next one starts — the model gives the break phones after a final (``#0``, ``#1``) much of
    its sound — and the last one until the closing ``sil``."""
    edges = np.concatenate([[0], np.cumsum(np.asarray(r.durations, dtype=np.int64))])
    closing = len(r.phones) - 2 if r.phones[-2:] == ["sil", "eos"] else len(r.phones)
    starts = [s.start for s in r.syllables] + [closing]
    return [(float(edges[a] * r.frame_seconds), float(edges[max(a, b)] * r.frame_seconds),
             s.hanzi) for s, a, b in zip(r.syllables, starts, starts[1:])]


def substitute_tones(zh: ZhPhones, tone_map: dict[int, int], symbols) -> ZhPhones:
    """A copy of ``zh`` whose toned finals follow ``tone_map`` (Mandarin tone → spoken tone).

    Each syllable's ``phones[start + 1]`` is its toned final; ``Syllable.tone`` stays the
    Mandarin category. Raises :class:`TextError` for a tone outside 1–5.
    """
    table = {s: i for i, s in enumerate(symbols)}
    phones = list(zh.phones)
    for syl in zh.syllables:
        new = tone_map.get(syl.tone)
        if new is None or syl.tone == 5:
            continue
        if new not in (1, 2, 3, 4, 5):
            raise TextError(f"tone_map maps tone {syl.tone} to {new}; tones are 1–5")
        final = phones[syl.start + 1]
        phones[syl.start + 1] = final[:-1] + str(new)
    return ZhPhones(zh.text, phones, [table[p] for p in phones], list(zh.syllables))


def _resolve(control: Control, ctx: ProsodyContext | None, name: str) -> np.ndarray | None:
    if control is None:
        return None
    value = control(ctx) if callable(control) else control
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if not np.isfinite(arr).all():
        raise TextError(f"the {name} control returned non-finite values")
    return arr
