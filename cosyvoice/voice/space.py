"""Kokoro's voice space: where each Kokoro voice sits for the speaker encoder, and how a
cloning prompt maps to a blend of its nearest voices.

Shipped with the code (``cosyvoice/voice/voice_space.json``, measured with the pinned weights)
and measured again only where the installed weights differ (``cosyvoice.tools.
embed_kokoro_voices``, started by ``run.sh`` in the background into
``models/kokoro/voice_space.json``; :func:`find_space` prefers that file): for each spoken
voice its language, the mean
GE2E embedding of a few fixed sentences it speaks (:data:`SENTENCES`), and its
:class:`~cosyvoice.voice.profile.VoiceProfile` measured on the same audio (the adapter's
source side). The file carries a key (:func:`space_key`: the model's and packs' recorded
hashes, the encoder weights, the sentences and :data:`VERSION`); a file whose key does not
match is ignored, so changed weights are measured again, never mixed with stale ones.

A prompt maps to the top-``k`` voices of the text's language by cosine similarity, weighted
``exp((s_i - s_1) / tau)``; ``k`` was chosen with ``bench/cloning_v2.py`` (k = 3 beat 2 and
5 on held-out clips with both encoders; ``tau`` was not tuned; docs/kokoro.md, "Cloning").
A blend's profile is derived from its parents' (:func:`mix`): on the one case measured it
was within 0.11 semitone, 0.3 % formants and 0.08 log-mel of the blend's own audio.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosyvoice.state_files import read_json
from cosyvoice.voice.blend import Blend
from cosyvoice.voice.profile import VoiceProfile

logger = logging.getLogger(__name__)

VERSION = 1
FILE_NAME = "voice_space.json"
SHIPPED = Path(__file__).resolve().parent / FILE_NAME  # measured with the pinned weights
MAP_FILE = Path(__file__).resolve().parent / "clone_map_en.npz"  # the learned map (bench only)
TOP_K = 3  # voices in a prompt's blend (bench/cloning_v2.py)
TAU = 0.03  # similarity temperature of the blend weights (bench/cloning_v2.py)
# Spoken by every voice of the language at setup; none of them is a bench sentence.
SENTENCES = {
    "en": ("The birch canoe slid on the smooth planks, and the boy glued the sheet to "
           "the dark blue background.",
           "It is easy to tell the depth of a well, but a chicken leg is a rare dish "
           "these days.",
           "Rice is often served in round bowls, and the juice of lemons makes fine punch.",
           "Four hours of steady work faced us, so we talked about it over a cup of tea."),
    "zh": ("今天早上天气很好，我们一起去公园散步。", "他每天都坐公共汽车去上班。",
           "这本书讲的是一个关于友谊的故事。", "请把桌子上的杯子递给我，谢谢你。"),
}


def voice_lang(name: str) -> str | None:
    """``en`` / ``zh`` for a Kokoro voice name (``af_…``, ``bm_…``, ``zf_…``), else None."""
    return {"a": "en", "b": "en", "z": "zh"}.get(name[:1])


def space_key(manifest: dict, encoder_path: Path) -> str:
    """What the stored measurements depend on, as a short hash: the Kokoro model's and voice
    packs' recorded sha256 (setup verified the files against them), the encoder weights'
    sha256, the sentences and the format version."""
    h = hashlib.sha256()
    with open(encoder_path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    parts = [str(VERSION), manifest["model"]["sha256"], h.hexdigest(),
             json.dumps(manifest["voices"]["sha256"], sort_keys=True),
             json.dumps(SENTENCES, ensure_ascii=False)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def current_key() -> str:
    """The key of a space measured now with the installed weights (the manifest's hashes:
    setup verified the files against them)."""
    from cosyvoice.assets import kokoro_manifest
    from cosyvoice.speaker.encoder import default_encoder_path

    return space_key(kokoro_manifest(), default_encoder_path())


@dataclass
class VoicePoint:
    """One Kokoro voice in the space."""

    name: str
    lang: str  # "en" | "zh"
    embedding: np.ndarray  # (256,) unit GE2E embedding
    profile: VoiceProfile

    def to_dict(self) -> dict:
        return {"name": self.name, "lang": self.lang,
                "embedding": [round(float(v), 6) for v in self.embedding],
                "profile": self.profile.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> VoicePoint:
        return cls(d["name"], d["lang"], np.asarray(d["embedding"], np.float32),
                   VoiceProfile.from_dict(d["profile"]))


@dataclass
class VoiceSpace:
    """The measured Kokoro voices, keyed by :func:`space_key`."""

    key: str
    points: dict[str, VoicePoint]
    seconds: float = 0.0  # how long setup took to measure them

    def to_dict(self) -> dict:
        return {"version": VERSION, "key": self.key, "seconds": round(self.seconds, 1),
                "voices": [p.to_dict() for p in self.points.values()]}

    @classmethod
    def from_dict(cls, d: dict) -> VoiceSpace:
        """The space of a parsed file; ValueError (or the KeyError/TypeError of a missing or
        mistyped field) when it is not one: every embedding must be a finite vector of one
        length."""
        points = [VoicePoint.from_dict(v) for v in d["voices"]]
        shapes = {p.embedding.shape for p in points}
        if len(shapes) > 1 or any(len(s) != 1 for s in shapes) or not all(
                np.isfinite(p.embedding).all() for p in points):
            raise ValueError("the voices' embeddings are not finite vectors of one length")
        return cls(str(d["key"]), {p.name: p for p in points}, float(d.get("seconds", 0.0)))

    @classmethod
    def read(cls, path: Path, key: str | None = None) -> VoiceSpace | None:
        """The space stored at ``path``; None when missing, damaged (then set aside, so that
        setup measures it again) or (given ``key``) measured with other weights."""
        space = read_json(path, "Kokoro voice space", cls.from_dict)
        if space is None:
            return None
        if key is not None and space.key != key:
            logger.info("voice space %s was measured with other weights; ignored", path)
            return None
        return space

    def write(self, path: Path) -> None:
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False), "utf-8")
        tmp.replace(path)

    def ranked(self, embedding: np.ndarray, lang: str) -> list[tuple[str, float]]:
        """Voices of ``lang`` by cosine similarity to ``embedding``, nearest first."""
        e = np.asarray(embedding, np.float32)
        e = e / max(float(np.linalg.norm(e)), 1e-12)
        sims = [(p.name, float(np.dot(p.embedding, e))) for p in self.points.values()
                if p.lang == lang]
        return sorted(sims, key=lambda s: -s[1])

    def blend_for(self, embedding: np.ndarray, lang: str, k: int = TOP_K,
                  tau: float = TAU) -> Blend:
        """The top-``k`` voices of ``lang`` weighted ``exp((s_i - s_1) / tau)``."""
        top = self.ranked(embedding, lang)[:max(1, k)]
        if not top:
            raise ValueError(f"no Kokoro voice of language {lang!r} was measured")
        best = top[0][1]
        return Blend.from_weights({n: float(np.exp((s - best) / tau)) for n, s in top})

    def profile_of(self, blend: Blend) -> VoiceProfile:
        return mix([(self.points[n].profile, w) for n, w in blend.parts])


def find_space(kokoro_dir: Path, key: str) -> VoiceSpace | None:
    """The voice space of the installed weights (``key``): the one measured here
    (``kokoro_dir/voice_space.json``), else the shipped one; None when neither matches."""
    measured = VoiceSpace.read(Path(kokoro_dir) / FILE_NAME, key)
    if measured is not None:
        return measured
    # The shipped file is part of the code, not state: read as is, never set aside (a test
    # checks that it matches the pinned weights); a checkout without it has none.
    if not SHIPPED.is_file():
        return None
    space = VoiceSpace.from_dict(json.loads(SHIPPED.read_text("utf-8")))
    return space if space.key == key else None


def mix(parts: list[tuple[VoiceProfile, float]]) -> VoiceProfile:
    """The profile of a blend derived from its parents' (weights sum to 1): pitch and
    formants as weighted geometric means, the spectral envelope and the rates as weighted
    arithmetic means."""
    ws = np.asarray([w for _, w in parts], np.float64)
    ws = ws / ws.sum()
    profs = [p for p, _ in parts]

    def geo(values) -> float:
        return float(np.exp(np.dot(ws, np.log(np.asarray(values, np.float64)))))

    def arith(values) -> np.ndarray:
        return np.tensordot(ws, np.asarray(values, np.float64), axes=1)

    first = profs[0]
    return VoiceProfile(
        f0_median_hz=geo([p.f0_median_hz for p in profs]),
        f0_low_hz=geo([p.f0_low_hz for p in profs]),
        f0_high_hz=geo([p.f0_high_hz for p in profs]),
        voiced_fraction=float(arith([p.voiced_fraction for p in profs])),
        formants_hz=[geo([p.formants_hz[i] for p in profs]) for i in range(3)],
        mel_mean=[round(float(v), 4) for v in arith([p.mel_mean for p in profs])],
        mel_std=[round(float(v), 4) for v in arith([p.mel_std for p in profs])],
        bandwidth_hz=min(p.bandwidth_hz for p in profs),
        syllable_rate=float(arith([p.syllable_rate for p in profs])),
        speech_ratio=float(arith([p.speech_ratio for p in profs])),
        sample_rate=first.sample_rate,
        duration_s=float(arith([p.duration_s for p in profs])),
    )


@dataclass
class CloneTarget:
    """Where a prompt sits in Kokoro's voice space: its GE2E embedding and, per text
    language, the blend of its nearest voices (what a saved v2 voice keeps besides its
    profile)."""

    embedding: np.ndarray  # (256,) unit GE2E embedding of the prompt
    blends: dict[str, Blend]  # text language ("en", "zh") → blend of that language's voices

    def to_dict(self) -> dict:
        return {"embedding": [round(float(v), 6) for v in self.embedding],
                "blends": {lang: b.to_dict() for lang, b in self.blends.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> CloneTarget:
        return cls(np.asarray(d["embedding"], np.float32),
                   {lang: Blend.from_weights(b["weights"]) for lang, b in d["blends"].items()})

    @classmethod
    def locate(cls, space: VoiceSpace, embedding: np.ndarray) -> CloneTarget:
        langs = sorted({p.lang for p in space.points.values()})
        return cls(np.asarray(embedding, np.float32),
                   {lang: space.blend_for(embedding, lang) for lang in langs})


@dataclass
class PromptVoice:
    """What clone mode needs of a prompt: its profile (the adapter's target) and, when
    Kokoro's voice space was measured, its place there (None: the joe/Baker path)."""

    profile: VoiceProfile
    target: CloneTarget | None = None


@dataclass
class CloneMap:
    """The learned map (``cosyvoice.tools.train_clone_map``): a prompt's GE2E embedding →
    weights over one language's voices, by ridge regression trained on synthetic blends.
    Written as ``clone_map_en.npz`` beside this module (not committed: it lost on held-out
    clips once kept to the prompt's sex, docs/kokoro.md) with the :func:`space_key` of the
    weights it was trained with; the bench reads it only with a matching key. The engine
    does not use it."""

    voices: list[str]
    weights: np.ndarray  # (V, 257): per voice, 256 embedding coefficients and a bias
    lang: str = "en"
    key: str = ""

    @classmethod
    def load(cls, path: Path) -> CloneMap:
        data = np.load(path)
        return cls([str(v) for v in data["voices"]], data["weights"].astype(np.float32),
                   str(data["lang"]) if "lang" in data else "en",
                   str(data["key"]) if "key" in data else "")

    @classmethod
    def read(cls, path: Path, key: str) -> CloneMap | None:
        """The map at ``path`` when it was trained with the weights of ``key``; else None."""
        try:
            clone_map = cls.load(path)
        except (OSError, ValueError, KeyError) as e:
            logger.debug("no clone map at %s: %s", path, e)
            return None
        if clone_map.key != key:
            logger.info("clone map %s was trained with other weights; not used", path)
            return None
        return clone_map

    def predict(self, embedding: np.ndarray) -> np.ndarray:
        """``(V,)`` the predicted weight of each voice (unclipped; may be negative)."""
        e = np.asarray(embedding, np.float32)
        return self.weights @ np.append(e / max(float(np.linalg.norm(e)), 1e-12), 1.0)

    def blend_for(self, embedding: np.ndarray, k: int = TOP_K, sex: str | None = None) -> Blend:
        """The prediction clipped at 0, its top ``k`` voices, normalized; ``sex`` ("f" |
        "m", the letter after a Kokoro voice's language letter): only voices of that sex."""
        pred = self.predict(embedding)
        if sex is not None:
            pred = np.where([v[1:2] == sex for v in self.voices], pred, -np.inf)
        top = np.argsort(-pred)[:k]
        picked = {self.voices[i]: float(pred[i]) for i in top if pred[i] > 0}
        return Blend.from_weights(picked or {self.voices[int(top[0])]: 1.0})
