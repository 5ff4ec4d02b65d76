"""Fitted voices: a Kokoro style pack searched to sound like a prompt's speaker.

:func:`fit` starts from the blend of the prompt's nearest voices (cloning v2), searches a
low-dimensional :class:`~cosyvoice.voice.fit_basis.StyleBasis` around it with CMA-ES
(:mod:`cosyvoice.voice.fit_cma`) scored by :mod:`cosyvoice.voice.fit_score`, and returns
a ``(510, 256)`` float32 pack with its provenance. It is long work meant for a background
job: it reports progress after every generation, stops on a time budget, on request or
when the score on the part of the prompt it does not fit stops improving, and resumes from
the state it returns (:class:`FitState`) exactly where it stopped.

Each generation also speaks the search's current mean; the result is the mean with the
best *selection* score (the held-aside part of the prompt when it was split, else the fit
score), not a lucky sample.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from cosyvoice.errors import PromptError
from cosyvoice.voice.fit_basis import StyleBasis
from cosyvoice.voice.fit_cma import CmaEs
from cosyvoice.voice.fit_score import PromptTarget, Score, ScoreWeights, score_outputs

logger = logging.getLogger(__name__)

METHOD = "cma-es over a style basis, v2"
# Short texts a candidate speaks (~2.5 s each); none is a bench sentence.
TEXTS = {
    "en": ("A quick brown fox jumped over the lazy dog.",
           "We shall meet again by the old mill at noon."),
    "zh": ("我们明天早上在老地方见面。", "窗外的小鸟唱着好听的歌。"),
}
G2P_LANG = {"en": "en-us", "zh": "zh"}
LANG_PREFIXES = {"en": ("a", "b"), "zh": ("z",)}


@dataclass
class FitConfig:
    """How a fit searches (see the modules it combines)."""

    lang: str = "en"
    texts: tuple[str, ...] = ()  # what candidates speak; () → TEXTS[lang]
    n_toward: int = 5  # nearest voices the basis moves toward, per half
    n_spread: int = 2  # principal components of the packs, per half
    sigma0: float = 0.3
    popsize: int | None = None  # CMA-ES default 4 + 3 ln(dim)
    weights: ScoreWeights = field(default_factory=ScoreWeights)
    split_min_s: float = 6.0  # split the prompt (fit / check) from this length on
    patience: int = 0  # stop after this many generations without a better selection (0: off)
    max_generations: int = 0  # 0: until the budget
    workers: int = 2  # candidates spoken at once (one Kokoro thread each)
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> FitConfig:
        d = dict(d)
        d["weights"] = ScoreWeights(**d.get("weights", {}))
        d["texts"] = tuple(d.get("texts", ()))
        return cls(**d)

    def fingerprint(self) -> dict:
        """What a resumed fit must share with the one it continues (not how it is run)."""
        return {k: v for k, v in self.to_dict().items()
                if k not in ("workers", "max_generations", "patience")}


@dataclass
class FitProgress:
    """Reported after every generation."""

    generation: int
    evaluations: int
    elapsed_s: float
    budget_s: float
    start: Score
    current: Score  # this generation's mean
    best: Score

    @property
    def eta_s(self) -> float:
        return max(0.0, self.budget_s - self.elapsed_s)


@dataclass
class FitState:
    """A fit that can go on: the search, its history and its best mean so far."""

    prompt_sha256: str
    config: dict
    cma: dict
    history: list[dict]
    best_theta: list[float]
    best: dict
    start: dict
    evaluations: int = 0
    elapsed_s: float = 0.0
    cpu_s: float = 0.0  # CPU seconds of this process while searching (all its threads)
    stale: int = 0  # generations since the selection score last improved
    best_generation: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> FitState:
        return cls(**d)


@dataclass
class FitResult:
    """The fitted ``(510, 256)`` float32 pack, its provenance and the state to resume."""

    pack: np.ndarray
    provenance: dict
    state: FitState
    stopped: str  # "budget" | "generations" | "converged" | "requested"


@dataclass
class FitTools:
    """What a fit runs: the Kokoro model, the GE2E encoder and the measured voice space."""

    kokoro: object
    encoder: object
    space: object

    def speak(self, phonemes: list[str], pack: np.ndarray,
              pause: Callable[[], None] | None = None) -> list[np.ndarray]:
        """Each phoneme string spoken with ``pack``; ``pause()`` before each one."""
        wavs = []
        for p in phonemes:
            if pause is not None:
                pause()
            wavs.append(self.kokoro.infer_pack(p, pack))
        return wavs


def prompt_sha256(wav: np.ndarray, sr: int) -> str:
    """sha256 of the prompt's float32 samples and rate (what a fit depends on)."""
    h = hashlib.sha256(str(int(sr)).encode())
    h.update(np.ascontiguousarray(np.asarray(wav, np.float32)).tobytes())
    return h.hexdigest()


def load_prompt(path: str | Path, limits=None, vad=None) -> tuple[np.ndarray, int]:
    """A prompt file checked by the app's prompt validation (format, length, speech, one
    voice: :func:`~cosyvoice.speaker.validation.validate_prompt`) → trimmed mono audio and
    its rate; raises :class:`PromptError` with what to fix."""
    from cosyvoice.speaker.validation import validate_prompt

    prompt = validate_prompt(path, limits, vad)
    return prompt.wav, prompt.sr


def start_basis(tools: FitTools, target: PromptTarget, config: FitConfig
                ) -> tuple[StyleBasis, str]:
    """The basis around the blend of the prompt's nearest voices of ``config.lang``."""
    blend = tools.space.blend_for(target.whole, config.lang)
    origin = sum(w * tools.kokoro.voices[n] for n, w in blend.parts)
    ranked = [n for n, _ in tools.space.ranked(target.whole, config.lang)]
    packs = {n: p for n, p in tools.kokoro.voices.items()
             if n.startswith(LANG_PREFIXES[config.lang])}
    basis = StyleBasis.around(origin, packs, ranked[: config.n_toward], config.n_spread)
    return basis, blend.spec


def selection(score: Score, weights: ScoreWeights) -> float:
    """The score a mean is chosen by: its total with the fit similarity replaced by the
    held-aside one when the prompt was split."""
    if score.check is None:
        return score.total
    return score.total + weights.sim * (score.check - score.sim)


def fit(prompt_wav: np.ndarray, sr: int, tools: FitTools, config: FitConfig | None = None,
        budget_s: float = 240.0, progress_cb: Callable[[FitProgress], None] | None = None,
        resume_state: FitState | dict | None = None,
        stop: Callable[[], bool] | None = None,
        checkpoint: Callable[[FitState], None] | None = None,
        pause: Callable[[], None] | None = None) -> FitResult:
    """Fit a style pack to ``prompt_wav`` ``(T,)`` at ``sr`` within ``budget_s`` seconds of
    wall time (prompt analysis and the start included; counted across resumes: a
    generation starts only while the mean generation time still fits, and the first
    always runs). ``stop`` is asked before each generation and, within one, before each
    text a candidate speaks: a generation stopped part-way is dropped (the state returned
    is the one before it, so a resumed fit does it again and ends where an uninterrupted
    one does), so a restart or a cancel waits for one text, not a generation.
    ``checkpoint`` gets the state after each generation (what a job keeps on disk to
    resume from); ``pause`` is called before each text a candidate speaks and before its
    scoring (a background fit waits there while the app serves requests). Raises
    :class:`PromptError` for an unusable prompt or a ``resume_state`` of another prompt or
    configuration."""
    config = config or FitConfig()
    begin, cpu_begin = time.monotonic(), time.process_time()  # setup counts too
    wav = np.asarray(prompt_wav, np.float32).reshape(-1)
    if wav.size == 0 or not np.isfinite(wav).all() or float(np.max(np.abs(wav))) < 1e-4:
        raise PromptError("the prompt audio is empty, silent or damaged; upload 3–30 s of "
                          "one person speaking")
    sha = prompt_sha256(wav, sr)
    target = PromptTarget.measure(wav, sr, tools.encoder, config.split_min_s)
    basis, blend_spec = start_basis(tools, target, config)
    texts = config.texts or TEXTS[config.lang]
    phonemes = [tools.kokoro.g2p(t, G2P_LANG[config.lang]) for t in texts]
    run = _Run(tools, basis, phonemes, target, config, pause)
    state = _resume(resume_state, sha, config) if resume_state is not None else None
    if state is None:
        state = run.new_state(sha)
    run.stop = stop  # from here on a generation may stop part-way
    es = CmaEs.from_state(state.cma)
    t0, c0 = begin - state.elapsed_s, cpu_begin - state.cpu_s
    stopped = "budget"
    with ThreadPoolExecutor(max(1, config.workers)) as pool:
        while True:
            if stop is not None and stop():
                stopped = "requested"
                break
            if config.max_generations and es.generation >= config.max_generations:
                stopped = "generations"
                break
            if config.patience and state.stale >= config.patience:
                stopped = "converged"
                break
            per_gen = (state.elapsed_s / es.generation) if es.generation else 0.0
            if state.elapsed_s + per_gen > budget_s and es.generation:
                break
            try:
                run.generation(es, state, pool)
            except _Stopped:  # dropped: the search goes on from the state before it
                es = CmaEs.from_state(state.cma)
                stopped = "requested"
                break
            state.elapsed_s = time.monotonic() - t0
            state.cpu_s = time.process_time() - c0
            state.history[-1]["elapsed_s"] = round(state.elapsed_s, 2)
            state.history[-1]["cpu_s"] = round(state.cpu_s, 2)
            state.cma = es.state_dict()
            if checkpoint is not None:
                checkpoint(state)
            if progress_cb is not None:
                progress_cb(run.progress(state, es.generation, budget_s))
    state.cma = es.state_dict()
    theta = np.asarray(state.best_theta)
    provenance = {
        "method": METHOD, "prompt_sha256": sha, "prompt_s": round(len(wav) / sr, 3),
        "lang": config.lang, "start_blend": blend_spec, "basis": basis.labels,
        "theta": [round(float(v), 5) for v in theta], "config": config.to_dict(),
        "generations": es.generation, "evaluations": state.evaluations,
        "chosen_generation": state.best_generation,
        "seconds": round(state.elapsed_s, 1), "cpu_s": round(state.cpu_s, 1),
        "prompt_f0_hz": round(target.f0_hz, 1),
        "scores": {"start": state.start, "final": state.best}, "stopped": stopped,
        "encoders": encoder_versions(tools), "texts": list(texts),
    }
    return FitResult(basis.pack(theta), provenance, state, stopped)


def _resume(given: FitState | dict, sha: str, config: FitConfig) -> FitState:
    state = given if isinstance(given, FitState) else FitState.from_dict(given)
    if state.prompt_sha256 != sha:
        raise PromptError("this saved fit belongs to another prompt recording")
    if FitConfig.from_dict(state.config).fingerprint() != config.fingerprint():
        raise PromptError("this saved fit was made with other settings; start a new fit")
    return state


class _Stopped(Exception):
    """A stop asked for within a generation (:meth:`_Run.step`)."""


class _Run:
    """One fit's fixed parts: evaluate candidates, keep the history and the best mean."""

    def __init__(self, tools: FitTools, basis: StyleBasis, phonemes: list[str],
                 target: PromptTarget, config: FitConfig,
                 pause: Callable[[], None] | None = None) -> None:
        self.tools, self.basis, self.phonemes = tools, basis, phonemes
        self.target, self.config, self.pause = target, config, pause
        self.stop: Callable[[], bool] | None = None  # asked before each step once set

    def step(self) -> None:
        """Before each text a candidate speaks and before its scoring: wait while the app
        is busy (``pause``); raise :class:`_Stopped` when a stop is asked for."""
        if self.pause is not None:
            self.pause()
        if self.stop is not None and self.stop():
            raise _Stopped

    def evaluate(self, theta: np.ndarray) -> Score:
        wavs = self.tools.speak(self.phonemes, self.basis.pack(theta), self.step)
        self.step()  # the scoring, too, waits its turn
        return score_outputs(wavs, self.tools.kokoro.sample_rate, theta, self.target,
                             self.tools.encoder, self.config.weights)

    def new_state(self, sha: str) -> FitState:
        zero = np.zeros(self.basis.dim)
        start = self.evaluate(zero)
        es = CmaEs(zero, self.config.sigma0, self.config.seed, self.config.popsize)
        entry = {"generation": 0, "evaluations": 1, "elapsed_s": 0.0,
                 "theta": zero.tolist(), "score": start.to_dict()}
        return FitState(sha, self.config.to_dict(), es.state_dict(), [entry], zero.tolist(),
                        start.to_dict(), start.to_dict(), evaluations=1)

    def generation(self, es: CmaEs, state: FitState, pool: ThreadPoolExecutor) -> None:
        xs = es.ask()
        mean = es.mean.copy()
        scores = list(pool.map(self.evaluate, [mean, *xs]))
        es.tell(xs, np.array([s.total for s in scores[1:]]))
        state.evaluations += len(scores)
        current = scores[0]
        state.history.append({"generation": es.generation, "evaluations": state.evaluations,
                              "theta": [round(float(v), 6) for v in mean],
                              "sigma": round(es.sigma, 5), "score": current.to_dict()})
        weights = self.config.weights
        if selection(current, weights) > selection(Score(**state.best), weights):
            state.best, state.best_theta, state.stale = current.to_dict(), mean.tolist(), 0
            state.best_generation = es.generation
        else:
            state.stale += 1
        logger.debug("fit generation %d: sim %.3f check %s f0 %s", es.generation,
                     current.sim, current.check, current.f0_st)

    def progress(self, state: FitState, generation: int, budget_s: float) -> FitProgress:
        return FitProgress(generation, state.evaluations, state.elapsed_s, budget_s,
                           Score(**state.start), Score(**state.history[-1]["score"]),
                           Score(**state.best))


def encoder_versions(tools: FitTools) -> dict:
    """The weights a fit depends on: Kokoro's model and the GE2E encoder (sha256, short)."""
    from cosyvoice.assets import kokoro_manifest
    from cosyvoice.speaker.encoder import default_encoder_path

    manifest = kokoro_manifest()
    h = hashlib.sha256(Path(default_encoder_path()).read_bytes()).hexdigest()
    return {"kokoro": manifest["model"]["sha256"][:16], "ge2e": h[:16],
            "space": getattr(tools.space, "key", "")}
