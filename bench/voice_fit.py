"""Fitted voices, research bench: which objective generalises, and what fitting time buys.

    nice -n 10 .venv/bin/python -m bench.voice_fit [--cases a,b] [--objectives a,b]
        [--budget 240] [--points 5] [--workers 2] [--out bench/out/voice_fit.jsonl]

For each case of :mod:`bench.heldout` and each named objective (:data:`OBJECTIVES`) it runs
:func:`cosyvoice.voice.fit.fit` on the prompt for ``--budget`` seconds, then takes
``--points`` means of the search's history (evenly spread over its generations, the start
and the chosen result always among them) and speaks the two bench sentences with each: the
d-vector judge (:mod:`bench.dvector`, never seen by the fit) and GE2E against the held-out
clips, and the output's median F0 against the prompt's. One JSON line per point goes to
``--out``; the summary prints the judge at the start, at the fit's choice, and the curve.

``--cross-lingual``: for each case, the pack fitted to its (English or other) prompt reads
two Mandarin sentences three ways — the blend of the prompt's nearest Mandarin voices
(what clone mode speaks Mandarin with today), the fitted pack as it is, and the fitted
pack's timbre half with the Mandarin blend's prosody half (the half that carries tones) —
scored by CER (Whisper base, :mod:`cosyvoice.asr`), the judge against the held-out clips
and F0 against the prompt's.

The fit's own timings depend on the machine's load: note ``uptime`` beside them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

import numpy as np

from bench.cloning import SENTENCES
from bench.heldout import build_cases
from cosyvoice.voice.fit import FitConfig, FitTools, fit
from cosyvoice.voice.fit_score import ScoreWeights, median_f0, semitones

OUT = Path(__file__).resolve().parent / "out" / "voice_fit.jsonl"
FIT_DIR = Path(__file__).resolve().parent / "out" / "fits"
# name → FitConfig overrides; the weights of cosyvoice.voice.fit_score.ScoreWeights
OBJECTIVES = {
    "default": {},
    "ge2e": {"weights": ScoreWeights(f0=0.0), "split_min_s": 1e9},
    "ge2e+f0": {"weights": ScoreWeights(f0=0.02), "split_min_s": 1e9},
    "ge2e+f0+split": {"weights": ScoreWeights(f0=0.02)},
    "ge2e+f0+prior": {"weights": ScoreWeights(f0=0.02, prior=0.02), "split_min_s": 1e9},
    "ge2e+f0+self": {"weights": ScoreWeights(f0=0.02, self_sim=0.5), "split_min_s": 1e9},
    "ge2e+f0+env": {"weights": ScoreWeights(f0=0.02, envelope=0.2)},
    "env+f0": {"weights": ScoreWeights(sim=0.0, f0=0.02, envelope=1.0)},
    "toward-only": {"weights": ScoreWeights(f0=0.02), "n_spread": 0, "split_min_s": 1e9},
    # not a method: the judge itself fitted to the held-out clips (headroom of the basis)
    "oracle": {"weights": ScoreWeights(f0=0.0), "split_min_s": 1e9},
}
ORACLE = "oracle"


class _StartAt:
    """A voice space that always locates the prompt's GE2E embedding (the oracle scores
    with another encoder but starts where the real fit starts)."""

    def __init__(self, space, embedding: np.ndarray) -> None:
        self.space, self.embedding, self.key = space, embedding, space.key

    def blend_for(self, _embedding, lang: str, *args):
        return self.space.blend_for(self.embedding, lang, *args)

    def ranked(self, _embedding, lang: str):
        return self.space.ranked(self.embedding, lang)


def oracle_setup(case, tools: FitTools, dvec) -> tuple[tuple[np.ndarray, int], FitTools]:
    """The held-out clips (joined) as the "prompt" and the d-vector as the fit's encoder."""
    from cosyvoice.audio.io import resample

    sr = case.heldout[0][1]
    joined = np.concatenate([resample(w, s, sr) for w, s in case.heldout])
    start = _StartAt(tools.space, tools.encoder.embed(*case.prompt))
    return (joined, sr), FitTools(tools.kokoro, dvec, start)


def load_tools():
    import torch

    from bench.dvector import DVectorEncoder
    from cosyvoice.acoustic.kokoro import KokoroModel, default_dir
    from cosyvoice.speaker.encoder import SpeakerEncoder
    from cosyvoice.tools.embed_kokoro_voices import ensure
    from cosyvoice.voice.space import FILE_NAME, VoiceSpace, current_key

    torch.set_num_threads(1)
    ensure(default_dir())
    space = VoiceSpace.read(default_dir() / FILE_NAME, current_key())
    tools = FitTools(KokoroModel.load(threads=1), SpeakerEncoder.load(), space)
    return tools, DVectorEncoder()


def judge_pack(tools: FitTools, dvec, pack: np.ndarray, case, refs) -> dict:
    """Speak the bench sentences with ``pack``: judge and GE2E to the held-out clips, F0."""
    wavs = [tools.kokoro.infer_pack(tools.kokoro.g2p(s, "en-us"), pack) for s in SENTENCES]
    sr = tools.kokoro.sample_rate
    d = [float(np.mean([dvec.embed(w, sr) @ r for r in refs[1]])) for w in wavs]
    g = [float(np.mean([tools.encoder.embed(w, sr) @ r for r in refs[0]])) for w in wavs]
    f0 = median_f0(np.concatenate(wavs), sr)
    return {"judge": float(np.mean(d)), "ge2e": float(np.mean(g)), "f0_hz": f0}


def pick_points(history: list[dict], best_gen: int, n: int) -> list[int]:
    gens = [h["generation"] for h in history]
    idx = sorted({int(round(i)) for i in np.linspace(0, len(gens) - 1, max(2, n))})
    picked = {gens[i] for i in idx} | {best_gen}
    return sorted(picked)


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def cached_fit(case, tools: FitTools, objective: str, budget: float, folder: str = "",
               workers: int = 2, dvec=None, **overrides) -> tuple[np.ndarray, dict, dict]:
    """The pack fitted to ``case``'s prompt with ``objective`` in ``budget`` seconds, from
    ``folder`` (default :data:`FIT_DIR`) when an earlier run left it there (keyed by the
    prompt, the settings and the budget), else fitted now and kept →
    ``(pack, provenance, run)``; ``run``: the state, wall seconds and load average."""
    import hashlib

    from cosyvoice.voice.fit import METHOD, prompt_sha256

    cfg = FitConfig(workers=workers, **{**OBJECTIVES[objective], **overrides})
    prompt = case.prompt
    if objective == ORACLE:
        prompt, tools = oracle_setup(case, tools, dvec)
    key = hashlib.sha256(json.dumps([prompt_sha256(*prompt), cfg.fingerprint(),
                                     budget, cfg.max_generations, METHOD],
                                    sort_keys=True).encode()).hexdigest()[:12]
    path = Path(folder or FIT_DIR) / f"{case.name}-{objective.replace('+', '_')}-{key}.npz"
    if path.is_file():
        data = np.load(path)
        return data["pack"], json.loads(str(data["provenance"])), json.loads(str(data["run"]))
    t0, base = time.monotonic(), rss_mb()
    peak = [base]
    res = fit(*prompt, tools, cfg, budget_s=budget,
              progress_cb=lambda p: peak.append(rss_mb()))
    run = {"state": res.state.to_dict(), "wall_s": round(time.monotonic() - t0, 1),
           "load": [round(v, 2) for v in os.getloadavg()],
           "rss_mb": {"before": round(base, 1), "peak_after_a_generation": round(max(peak), 1)}}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, pack=res.pack, provenance=json.dumps(res.provenance), run=json.dumps(run))
    return res.pack, res.provenance, run


def run(case, name: str, tools: FitTools, dvec, budget: float, points: int, workers: int,
        out, **overrides) -> None:
    from cosyvoice.voice.fit import FitState, start_basis
    from cosyvoice.voice.fit_score import PromptTarget

    cfg = FitConfig(workers=workers, **{**OBJECTIVES[name], **overrides})
    _, prov, fitted = cached_fit(case, tools, name, budget, workers=workers, dvec=dvec,
                                 **overrides)
    state = FitState.from_dict(fitted["state"])
    wall, load = fitted["wall_s"], fitted["load"]
    refs = ([tools.encoder.embed(w, sr) for w, sr in case.heldout],
            [dvec.embed(w, sr) for w, sr in case.heldout])
    target = PromptTarget.measure(*case.prompt, tools.encoder, cfg.split_min_s)
    basis, _ = start_basis(tools, target, cfg)  # the oracle starts there too
    best_gen = state.best_generation
    prompt_f0 = target.f0_hz
    for h in state.history:
        if h["generation"] not in pick_points(state.history, best_gen, points):
            continue
        j = judge_pack(tools, dvec, basis.pack(np.asarray(h["theta"])), case, refs)
        row = {"case": case.name, "kind": case.kind, "objective": name,
               "generation": h["generation"], "elapsed_s": h["elapsed_s"],
               "chosen": h["generation"] == best_gen, "fit": h["score"],
               "f0_st": semitones(prompt_f0, j["f0_hz"]) if j["f0_hz"] else None,
               "budget_s": budget, "wall_s": round(wall, 1),
               "load": load, **j}
        out.write(json.dumps(row) + "\n")
        out.flush()
        print(f"  {case.name:14s} {name:16s} gen {h['generation']:3d} "
              f"t {h['elapsed_s']:6.1f}s fit-sim {h['score']['sim']:.3f} "
              f"check {h['score']['check']} judge {j['judge']:.3f} ge2e {j['ge2e']:.3f} "
              f"f0 {row['f0_st'] if row['f0_st'] is None else round(row['f0_st'], 2)} st"
              + ("  <- chosen" if row["chosen"] else ""), flush=True)


ZH_SENTENCES = ("这家小店的面条非常好吃，每天中午都有很多人排队。",
                "春天来了，山上的花都开了，孩子们在草地上放风筝。")


def cross_lingual(case, tools: FitTools, dvec, asr, objective: str, budget: float, out,
                  **overrides) -> None:
    from bench.eval.metrics import cer
    from cosyvoice.audio.io import resample

    pack, prov, _ = cached_fit(case, tools, objective, budget, dvec=dvec, **overrides)
    prompt_emb = tools.encoder.embed(*case.prompt)
    zh = tools.space.blend_for(prompt_emb, "zh")
    zh_pack = sum(w * tools.kokoro.voices[n] for n, w in zh.parts).astype(np.float32)
    mixed = np.concatenate([pack[:, :128], zh_pack[:, 128:]], axis=1)
    refs = [dvec.embed(w, sr) for w, sr in case.heldout]
    sr = tools.kokoro.sample_rate
    prompt_f0 = prov["prompt_f0_hz"]
    for label, p in (("zh blend", zh_pack), ("fit", pack), ("fit timbre + zh prosody", mixed)):
        wavs = [tools.kokoro.infer_pack(tools.kokoro.g2p(t, "zh"), p) for t in ZH_SENTENCES]
        heard = [asr.transcribe(resample(w, sr, 16000), "zh").text for w in wavs]
        errs = [cer(t, h) for t, h in zip(ZH_SENTENCES, heard, strict=True)]
        judge = float(np.mean([np.mean([dvec.embed(w, sr) @ r for r in refs]) for w in wavs]))
        f0 = median_f0(np.concatenate(wavs), sr)
        row = {"case": case.name, "objective": objective, "cross_lingual": label,
               "zh_blend": zh.spec, "cer": float(np.mean(errs)), "judge": judge,
               "f0_st": semitones(prompt_f0, f0) if f0 else None, "heard": heard}
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
        print(f"  {case.name:14s} {label:24s} CER {row['cer']:5.1f} %  judge {judge:.3f}  "
              f"F0 {row['f0_st'] if f0 is None else round(row['f0_st'], 2)} st  {heard}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="")
    ap.add_argument("--objectives", default="ge2e+f0")
    ap.add_argument("--budget", type=float, default=240.0)
    ap.add_argument("--points", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--generations", type=int, default=0, help="stop after N (0: budget)")
    ap.add_argument("--popsize", type=int, default=0, help="CMA-ES population (0: default)")
    ap.add_argument("--cross-lingual", action="store_true",
                    help="fitted voices reading Mandarin (CER by Whisper base)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cases = build_cases()
    if args.cases:
        cases = [c for c in cases if c.name in args.cases.split(",")]
    tools, dvec = load_tools()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    asr = None
    if args.cross_lingual:
        from cosyvoice.acoustic.kokoro import ROOT
        from cosyvoice.asr.transcriber import Transcriber

        asr = Transcriber.load(ROOT / "models", "whisper-base", threads=2)
    overrides = {"max_generations": args.generations, "popsize": args.popsize or None}
    with open(args.out, "a", encoding="utf-8") as out:
        for case in cases:
            for name in args.objectives.split(","):
                if asr is not None:
                    cross_lingual(case, tools, dvec, asr, name, args.budget, out, **overrides)
                    continue
                run(case, name, tools, dvec, args.budget, args.points, args.workers, out,
                    **overrides)


if __name__ == "__main__":
    main()
