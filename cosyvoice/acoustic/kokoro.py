"""Kokoro-82M backend: the int8 ONNX model on onnxruntime, 54 voice packs as data.

Files (installed and hash-checked by ``cosyvoice.tools.setup_kokoro`` into
``models/kokoro/``): ``kokoro-v1.0.int8.onnx`` (inputs ``tokens`` (1, N+2) int64 with a 0
pad at both ends, ``style`` (1, 256) float32, ``speed`` (1,) float32; output ``audio``
at 24 kHz), ``vocab.json`` (114 symbols → ids) and ``voices/<name>.bin`` (510 × 1 × 256
float32 each). As Kokoro does, the style vector of an utterance is the voice pack's row
``len(phonemes) - 1``: each row was trained for phoneme strings of that length.

One :class:`KokoroModel` (the managed model) serves every voice; :meth:`KokoroModel.speaker`
gives a light :class:`KokoroSpeaker` bound to a voice and a run language that implements
:class:`~cosyvoice.acoustic.base.AcousticModel`. The graph has no noise input, so the same
phonemes, voice and speed give the same samples: ``seed`` is not needed.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosyvoice.acoustic.base import AcousticOutput
from cosyvoice.assets import kokoro_manifest
from cosyvoice.errors import ModelError, TextError
from cosyvoice.frontend.kokoro_g2p import KokoroG2P
from cosyvoice.frontend.pronunciation import Reading, arpabet_to_ipa, split_at_readings
from cosyvoice.voice.blend import Blend, parse_blend

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent.parent
# voice-name prefix letter → (language of its G2P, label). Japanese is spoken only where
# its G2P is installed (:func:`japanese_g2p_installed`).
LANGUAGES = {"a": ("en-us", "English (US)"), "b": ("en-gb", "English (UK)"),
             "z": ("zh", "Mandarin"), "e": ("es", "Spanish"), "f": ("fr", "French"),
             "i": ("it", "Italian"), "p": ("pt-br", "Portuguese (Brazil)"),
             "h": ("hi", "Hindi"), "j": ("ja", "Japanese")}
# what misaki's Japanese G2P (misaki.cutlet) imports: MeCab, its dictionary, kana tools
JAPANESE_G2P_MODULES = ("fugashi", "unidic_lite", "jaconv", "mojimoji")
GENDERS = {"f": "female", "m": "male"}
# Who speaks a Mandarin run inside a sentence of an English voice, by gender: the English
# packs never learned Mandarin's tones. (English runs inside a Mandarin voice's sentence
# stay with that voice, as Kokoro's own pipeline reads English words in Mandarin.)
MANDARIN_STAND_IN = {"f": "zf_xiaobei", "m": "zm_yunxi"}
BLEND_CACHE = 32
SPLIT_AT = re.compile(r"(?<=[.!?;:,—…])\s+|\s+")  # where an over-long string may be cut
# Streaming below the sentence (latency_pieces): where a clause ends in the phonemes (the
# G2P keeps punctuation, Mandarin's as ASCII), and the pieces' sizes in symbols.
CLAUSE_CUT = re.compile(r"[.!?;:,—…]+(?= )")
FIRST_PIECE = 24
# English words that start a phrase, in the G2P's symbols without stress marks: a cut
# inside a long clause goes before one of them where it can (``_word_cut``)
PHRASE_STARTS = frozenset(
    "ðə ðɪ ði ə ɐ æn ən ænd ɔɹ bʌt tʊ tə tu ʌv əv ɪn ɔn æt wɪð fɔɹ fəɹ fɹʌm fɹəm bI æz ɐz "
    "ðæt ðət wɛn ɪf bɪkʌz ʌntɪl sO wɪʧ hu wIl ɪntʊ əbWt Ovəɹ æftəɹ bɪfɔɹ θɹu".split())
STRESS = str.maketrans("", "", "ˈˌ")
PIECE_GROWTH = 4.0
MIN_PIECE = 5


def default_dir() -> Path:
    return ROOT / "models" / "kokoro"


@dataclass(frozen=True)
class KokoroConfig:
    """What the model files promise (from the manifest beside the engine)."""

    model_file: str
    sample_rate: int
    style_rows: int  # voice pack rows = the longest phoneme string (510)
    style_dim: int

    @classmethod
    def from_dict(cls, d: dict) -> KokoroConfig:
        shape = d["voices"]["shape"]
        return cls(model_file=d["model"]["file"], sample_rate=int(d["sample_rate"]),
                   style_rows=int(shape[0]), style_dim=int(shape[-1]))

    def to_dict(self) -> dict:
        return {"model_file": self.model_file, "sample_rate": self.sample_rate,
                "style_rows": self.style_rows, "style_dim": self.style_dim}


def japanese_g2p_installed() -> bool:
    """Whether misaki's Japanese G2P can run here (its modules are importable; no import)."""
    return all(importlib.util.find_spec(m) is not None for m in JAPANESE_G2P_MODULES)


def voice_language(name: str) -> str | None:
    """The G2P language (``en-us``, ``en-gb``, ``zh``, ``es``, ``fr``, ``it``, ``pt-br``,
    ``hi``, ``ja``) of a voice name; None if it is not spoken here."""
    lang = LANGUAGES.get(name[:1])
    if lang is None or (lang[0] == "ja" and not japanese_g2p_installed()):
        return None
    return lang[0]


def voice_label(name: str) -> str:
    """``"English (US) · female · Kokoro af_heart"``."""
    lang = LANGUAGES.get(name[:1], ("", name[:1]))[1]
    return f"{lang} · {GENDERS.get(name[1:2], '?')} · Kokoro {name}"


def installed_voices(folder: str | Path | None = None) -> list[str]:
    """The spoken-language voices whose packs, model and vocabulary are installed (a
    directory listing; no model is loaded)."""
    folder = Path(folder) if folder else default_dir()
    model_file = kokoro_manifest()["model"]["file"]
    if not ((folder / model_file).is_file() and (folder / "vocab.json").is_file()
            and (folder / "voices").is_dir()):
        return []
    return [p.stem for p in sorted((folder / "voices").glob("*.bin"))
            if voice_language(p.stem) is not None]


class KokoroModel:
    """The Kokoro ONNX session, its vocabulary and voice packs (``(510, 256)`` each)."""

    name = "kokoro"

    def __init__(self, session, vocab: dict[str, int], voices: dict[str, np.ndarray],
                 config: KokoroConfig, device: str) -> None:
        self._session = session
        self.vocab = vocab
        self.voices = voices
        self.config = config
        self.device = device
        self.sample_rate = config.sample_rate
        self.g2p = KokoroG2P()
        self._blends: dict[str, np.ndarray] = {}  # blend spec → mixed pack
        self._lock = threading.Lock()
        self.path = "onnx"  # how the graph runs (kokoro_fast.resolve_path)

    @classmethod
    def load(cls, folder: str | Path | None = None, device: str = "cpu",
             threads: int = 1, path: str = "auto") -> KokoroModel:
        """``threads``: onnxruntime intra-op threads (settings.kokoro_threads). ``path``:
        how the graph runs (``auto``, ``int8``, ``fp32``, ``onnx``; see
        :mod:`cosyvoice.acoustic.kokoro_fast`)."""
        import onnxruntime as ort

        from cosyvoice.acoustic.kokoro_fast import make_session

        folder = Path(folder) if folder else default_dir()
        config = KokoroConfig.from_dict(kokoro_manifest())
        model_path = folder / config.model_file
        if not model_path.is_file():
            raise ModelError(f"Kokoro model not found: {model_path}; run "
                             "`bash run.sh --setup-only`")
        vocab = json.loads((folder / "vocab.json").read_text("utf-8"))["vocab"]
        voices = {}
        for p in sorted((folder / "voices").glob("*.bin")):
            pack = np.fromfile(p, dtype="<f4")
            if pack.size != config.style_rows * config.style_dim:
                raise ModelError(f"voice pack {p.name} has {pack.size} values; expected "
                                 f"{config.style_rows} × {config.style_dim}")
            voices[p.stem] = pack.reshape(config.style_rows, config.style_dim)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, int(threads))
        opts.inter_op_num_threads = 1
        session, chosen = make_session(model_path, opts, device, path)
        logger.info("loaded Kokoro (%d voices, %d threads, %s path) on %s", len(voices),
                    opts.intra_op_num_threads, chosen, device)
        model = cls(session, vocab, voices, config, device)
        model.path = chosen
        return model

    def pack(self, voice: str) -> np.ndarray:
        """The ``(510, 256)`` style pack of a voice name or of a blend spec
        (``af_bella:2+af_sky:1``: the weighted mean of the packs, as Kokoro mixes voices);
        blends are kept (a few dozen at most: 0.5 MB each)."""
        pack = self.voices.get(voice)
        if pack is not None:
            return pack
        with self._lock:
            pack = self._blends.get(voice)
            if pack is None:
                blend = self._blend(voice)
                pack = sum(w * self.voices[name] for name, w in blend.parts).astype(np.float32)
                if len(self._blends) >= BLEND_CACHE:
                    self._blends.pop(next(iter(self._blends)))
                self._blends[voice] = pack
        return pack

    def _blend(self, voice: str) -> Blend:
        try:
            return parse_blend(voice, self.voices, user=False)  # a canonical spec
        except TextError:
            raise ModelError(f"Kokoro voice {voice!r} is not installed") from None

    def speaker(self, voice: str, language: str | None = None,
                pack: np.ndarray | None = None) -> KokoroSpeaker:
        """The backend for ``voice`` (a name or a blend spec) speaking runs of ``language``
        (``en``, ``zh`` or the voice's own; default: the voice's own — a blend's is its
        heaviest voice's). English runs take the voice's accent (American for a Mandarin
        voice); a Mandarin run of a voice of another language goes to
        :data:`MANDARIN_STAND_IN`. With ``pack`` (a fitted voice's style pack, ``voice``
        its name): :meth:`pack_speaker`, which speaks every language with that pack."""
        if pack is not None:
            return self.pack_speaker(pack, language or "en", voice)
        lead = voice if voice in self.voices else self._blend(voice).lead  # checks it
        own = voice_language(lead) or "en-us"
        if language is None or own.startswith(language):
            return KokoroSpeaker(self, voice, own)
        if language == "zh":
            stand_in = MANDARIN_STAND_IN.get(lead[1:2], MANDARIN_STAND_IN["f"])
            return KokoroSpeaker(self, stand_in if stand_in in self.voices else voice, "zh")
        return KokoroSpeaker(self, voice, "en-us")

    def pack_speaker(self, pack: np.ndarray, language: str,
                     name: str = "fitted") -> KokoroSpeaker:
        """The backend for a ``(510, 256)`` style pack given as data (a fitted voice) speaking
        runs of ``language`` (``en``: American English, ``zh``, or a G2P language)."""
        return KokoroSpeaker(self, name, {"en": "en-us"}.get(language, language), pack)

    def ids(self, phonemes: str) -> list[int]:
        """Phonemes → token ids; symbols outside the vocabulary are dropped (logged)."""
        ids = [self.vocab[c] for c in phonemes if c in self.vocab]
        if len(ids) != len(phonemes):
            missing = sorted({c for c in phonemes if c not in self.vocab})
            logger.debug("dropped symbols outside Kokoro's vocabulary: %s", missing)
        return ids

    def infer(self, phonemes: str, voice: str, speed: float = 1.0,
              style_len: int | None = None) -> np.ndarray:
        """One phoneme string (≤ 510 symbols) → float32 audio ``(T,)`` at 24 kHz.
        ``style_len``: the phoneme count whose style row speaks it (default its own; a
        piece of a longer string takes the whole string's, so its pieces keep one voice)."""
        return self.infer_pack(phonemes, self.pack(voice), speed, style_len)

    def infer_pack(self, phonemes: str, pack: np.ndarray, speed: float = 1.0,
                   style_len: int | None = None) -> np.ndarray:
        """:meth:`infer` with a ``(510, 256)`` style pack given as data (a fitted voice's,
        or one a fit is trying)."""
        ids = self.ids(phonemes)[: self.config.style_rows]
        if not ids:
            return np.zeros(0, np.float32)
        row = min(style_len or len(ids), self.config.style_rows) - 1
        style = pack[row][None, :]
        out = self._session.run(None, {
            "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
            "style": np.ascontiguousarray(style, dtype=np.float32),
            "speed": np.array([speed], dtype=np.float32),
        })[0]
        return np.asarray(out, dtype=np.float32).reshape(-1)


def split_phonemes(phonemes: str, limit: int) -> list[str]:
    """Cut a phoneme string into pieces of at most ``limit`` symbols, at punctuation or
    spaces where it can (a frontend sentence is rarely this long)."""
    if len(phonemes) <= limit:
        return [phonemes]
    pieces, cur = [], ""
    for word in SPLIT_AT.split(phonemes):
        while len(word) > limit:
            pieces.append(word[:limit])
            word = word[limit:]
        if cur and len(cur) + 1 + len(word) > limit:
            pieces.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return [p for p in [*pieces, cur] if p]


def latency_pieces(phonemes: str, first: int = FIRST_PIECE, growth: float = PIECE_GROWTH,
                   limit: int = 510) -> list[str]:
    """Cut one sentence's phonemes for streaming. The first piece is sized for latency: its
    first clause (up to the first clause punctuation) when that has at most ``first``
    symbols, else as many words as fit in ``first``. Each later piece may be ``growth`` ×
    the one before (and at most ``limit``; a quarter more rather than leave a scrap), cut
    after the last clause punctuation that fits, else the last word; so at a real-time
    factor under 1 / ``growth`` each piece is ready before the one before it has played,
    and the later ones are as long as that allows, for quality. Every piece has at least
    :data:`MIN_PIECE` symbols; a sentence that fits in ``first`` with no clause inside it
    stays whole."""
    clauses = [m.end() for m in CLAUSE_CUT.finditer(phonemes)]
    words = [m.start() for m in re.finditer(" ", phonemes)]
    end = len(phonemes) - MIN_PIECE  # no cut leaves less than a piece after it
    pieces, start, size = [], 0, first
    while True:
        lo, hi = start + MIN_PIECE, min(start + size, end)
        inside = [c for c in clauses if lo <= c <= end]
        if pieces and len(phonemes) - start <= size + size // 4:
            break
        if not pieces and len(phonemes) <= size and not inside:
            break
        fit = [c for c in inside if c <= hi]
        if fit:
            cut = fit[0] if not pieces else fit[-1]
        else:
            cut = _word_cut(phonemes, [w for w in words if lo <= w <= hi], start, hi)
            cut = cut if cut is not None else min(
                (c for c in (*clauses, *words) if lo <= c <= end), default=None)
        if cut is None:
            break
        pieces.append(phonemes[start:cut].strip())
        start, size = cut, min(limit, int(growth * len(pieces[-1])))
    rest = phonemes[start:].strip()
    return [p for p in [*pieces, rest] if p]


def _word_cut(phonemes: str, cuts: list[int], start: int, hi: int) -> int | None:
    """The word boundary to cut a clause at: the last one before a function word (an
    English phrase's start: article, preposition, conjunction) in the second half of the
    reach, else the last one."""
    for w in reversed(cuts):
        if w - start < (hi - start) / 2:
            break
        word = phonemes[w + 1:].split(" ", 1)[0].translate(STRESS)
        if word in PHRASE_STARTS:
            return w
    return cuts[-1] if cuts else None


class KokoroSpeaker:
    """One Kokoro voice speaking one language: the AcousticModel the engine calls."""

    def __init__(self, model: KokoroModel, voice: str, language: str,
                 pack: np.ndarray | None = None) -> None:
        self.model = model
        self.voice = voice
        self.language = language
        self.pack = pack  # a style pack given as data speaks instead of ``voice``'s
        self.name = f"kokoro:{voice}"
        self.sample_rate = model.sample_rate

    def phonemize(self, text: str) -> list[list[str]]:
        return [list(self.model.g2p(text, self.language))]

    def style_pack(self) -> np.ndarray:
        """The ``(510, 256)`` style pack this speaker speaks with: the one given as data,
        else its voice's (a blend's is computed once and kept by the model)."""
        return self.pack if self.pack is not None else self.model.pack(self.voice)

    def phonemes_with(self, text: str, readings: Mapping[str, Reading] | None = None) -> str:
        """Kokoro's phonemes of ``text``; a word with a reading is spoken from it (pinyin →
        misaki's Mandarin IPA, ARPAbet → espeak IPA → misaki's English symbols)."""
        pieces = split_at_readings(text, (readings or {}).values())
        if not any(isinstance(p, Reading) for p in pieces):
            return self.model.g2p(text, self.language)
        out = []
        for piece in pieces:
            if isinstance(piece, Reading):
                out.append(reading_to_kokoro(piece, self.language))
            elif piece.strip():
                out.append(self.model.g2p(piece, self.language))
        return " ".join(p.strip() for p in out if p.strip())

    def synthesize(self, text: str, speed: float = 1.0, seed: int | None = None,
                   controls: object = None,
                   readings: Mapping[str, Reading] | None = None) -> AcousticOutput:
        """Speak one normalized sentence at ``speed`` (Kokoro's own duration scaling).
        ``seed`` is unused (the graph is deterministic); ``controls`` are not followed —
        ``pitch_applied=False``, so a style's pitch, range and level are applied after.
        ``readings``: pronunciation overrides of its words."""
        phonemes = self.phonemes_with(text, readings)
        pack = self.style_pack()
        pieces = [self.model.infer_pack(p, pack, speed)
                  for p in split_phonemes(phonemes, self.model.config.style_rows)]
        wav = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        return AcousticOutput(wav=np.clip(wav, -1.0, 1.0), sample_rate=self.sample_rate,
                              phonemes=list(phonemes))

    def synthesize_pieces(self, text: str, speed: float = 1.0,
                          readings: Mapping[str, Reading] | None = None
                          ) -> Iterator[tuple[AcousticOutput, bool]]:
        """:meth:`synthesize` in pieces as they are made, for streaming: ``(piece, last)``,
        the sentence's phonemes cut by :func:`latency_pieces`, every piece spoken with the
        whole sentence's style row (one voice across the cuts). A piece's ``phonemes`` end
        in the clause's punctuation where it was cut after one."""
        phonemes = self.phonemes_with(text, readings)
        whole = len(self.model.ids(phonemes))
        pieces = latency_pieces(phonemes, limit=self.model.config.style_rows)
        pack = self.style_pack()
        for k, piece in enumerate(pieces):
            wav = self.model.infer_pack(piece, pack, speed, style_len=whole)
            yield (AcousticOutput(wav=np.clip(wav, -1.0, 1.0), sample_rate=self.sample_rate,
                                  phonemes=list(piece)), k == len(pieces) - 1)


def reading_to_kokoro(reading: Reading, language: str) -> str:
    """One override in Kokoro's symbols: pinyin through misaki's pinyin → IPA (as its
    Mandarin G2P spells a word), ARPAbet through espeak IPA and the misaki rewrite."""
    if reading.lang == "zh":
        from misaki.zh import ZHG2P

        return "".join(ZHG2P.py2ipa(p) for p in reading.phones).replace(chr(815), "")
    from cosyvoice.frontend.kokoro_g2p import espeak_to_misaki

    accent = language if language in ("en-us", "en-gb") else "en-us"
    return espeak_to_misaki(arpabet_to_ipa(reading.phones), accent)
