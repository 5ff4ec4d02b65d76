"""Which voice should speak Mandarin by default? Baker beside Kokoro's Mandarin voices.

    nice -n 5 .venv/bin/python bench/zh_voices.py [--voices baker,zm_yunxi,...] [--runs 3] [--mid]

Three measurements:

1. **Tones** — ``zh_tones.py`` v3 for every system: the carrier 请读X。 (qing3 du2 X, X
   phrase-final: each tone shows its citation shape) for 45 bases × tones 1–4 = 180
   targets; X's final plus the break after it, cut by the model's own durations; F0 by
   Praat (5 ms) in semitones re the median F0 outside X; ``zh_tones.classify_v2`` (rise
   from an early minimum → 2, reaches −4 st → 3, falls > 2 st → 4, else 1: thresholds set
   on Baker). Kokoro gets misaki's own IPA of each syllable (``ZHG2P.py2ipa``, spaced as
   its G2P writes 请读八。: ``ʨʰi↓ŋtu↗ pa→.``); its durations come from a probe copy of
   its graph that also outputs ``/encoder/Round_output_0`` (the rounded per-symbol
   durations, 600 samples each; written to ``bench/out``, bench-only). Baker gets the
   phone ids ``zh_tones.py`` builds. Because the thresholds were set on one voice, a
   threshold-free figure is printed too: **tone separability**, the leave-one-base-out
   nearest-centroid accuracy of the register-centred five-point contours (do the four
   tones differ from each other at all? chance 25 %), with each tone's mean contour.
   ``--mid``: the mid-sentence carrier 请读X这个字。 instead (zh_tones v2), where a tone
   is not stretched by phrase-final lengthening.
2. **DNSMOS** P.835 OVRL over ``--sentences`` unseen sentences (``bench/kokoro.py`` ZH),
   through the app's Synthesizer (22.05 kHz output).
3. **The 30-character sentence** of ``zh_quality.py``: duration (4–9 s), longest inner
   silence (≤ 0.6 s), DNSMOS, RTF (median of ``--runs`` after a warm-up).

No Mandarin ASR is installable here, so intelligibility is not scored; the tone check is
the closest stand-in.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median  # noqa: E402
from bench._metrics import dnsmos  # noqa: E402
from bench.kokoro import ZH  # noqa: E402
from bench.zh_quality import SENTENCE_30, longest_inner_silence  # noqa: E402
from bench.zh_tones import (  # noqa: E402
    BASES,
    classify,
    classify_v2,
    contour,
    f0_track,
    print_table,
)

OUT = Path(__file__).resolve().parent / "out"
DURATIONS = "/encoder/Round_output_0"  # Kokoro's rounded per-symbol durations
VOWELS = set("aeiouyɑɐæəɛɤɨɪʊʌɯɔøœ")  # where a misaki syllable's final starts
DEFAULT_VOICES = ("baker", "zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi",
                  "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang")


def kokoro_probe(model):
    """An onnxruntime session of Kokoro's graph that also returns its rounded durations
    (bench/out/kokoro-durations.onnx, made once from the installed model)."""
    import onnx
    import onnxruntime as ort

    from cosyvoice.acoustic.kokoro import default_dir

    path = OUT / "kokoro-durations.onnx"
    if not path.is_file():
        graph = onnx.load(str(default_dir() / model.config.model_file))
        graph.graph.output.append(onnx.ValueInfoProto(name=DURATIONS))
        OUT.mkdir(parents=True, exist_ok=True)
        onnx.save(graph, str(path))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def kokoro_contour(session, model, voice: str, target: str, final: bool = True):
    """(times, st, edges) as ``zh_tones.contour`` gives them, for Kokoro: edges = X's
    initial start, final start, final end, break end (seconds). ``final=False``: the
    mid-sentence carrier 请读X这个字。 (the break after X is the word space)."""
    from misaki.zh import ZHG2P

    def ipa(*syllables: str) -> str:  # as misaki's legacy G2P: without U+032F (non-syllabic)
        return "".join(ZHG2P.py2ipa(p) for p in syllables).replace(chr(815), "")

    lead = ipa("qing3", "du2") + " "
    x = ipa(target)
    tail = "." if final else " " + ipa("zhe4", "ge4", "zi4") + "."
    phonemes = f"{lead}{x}{tail}"
    ids = model.ids(phonemes)
    if len(ids) != len(phonemes):
        raise ValueError(f"symbols outside Kokoro's vocabulary in {phonemes!r}")
    wav, dur = session.run(None, {
        "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
        "style": model.pack(voice)[len(ids) - 1][None, :].astype(np.float32),
        "speed": np.array([1.0], dtype=np.float32)})
    wav = np.asarray(wav, np.float32).reshape(-1)
    edges = np.concatenate([[0], np.cumsum(np.asarray(dur).reshape(-1))]) * 600 / 24000
    k = 1 + len(lead)  # X's first symbol (after the start pad)
    v = k + next(i for i, c in enumerate(x) if c in VOWELS)
    end = k + len(x)  # the '.' or the space after X: the break
    times, f0 = f0_track(wav, 24000)
    syl = (times >= edges[k]) & (times < edges[end + 1])
    ref = np.median(f0[~syl & (f0 > 0)])
    st = np.where(f0 > 0, 12 * np.log2(np.maximum(f0, 1e-3) / ref), np.nan)
    return times, st, np.array([edges[k], edges[v], edges[end], edges[end + 1]])


def five_points(st: np.ndarray) -> np.ndarray:
    """The contour's mean over five equal parts."""
    return np.array([p.mean() for p in np.array_split(st, 5)])


def separability(points: dict[str, np.ndarray]) -> float:
    """Leave-one-base-out nearest-centroid accuracy of the tones from the five-point
    contours, each centred on its own mean (register removed): whether a voice makes its
    four tones different from each other at all, whatever their absolute level — a check
    that does not depend on thresholds set on Baker. Chance is 25 %."""
    bases = sorted({t[:-1] for t in points})
    hits = total = 0
    for held in bases:
        train = {t: p - p.mean() for t, p in points.items() if t[:-1] != held}
        cents = [np.mean([p for t, p in train.items() if t[-1] == str(k)], axis=0)
                 for k in (1, 2, 3, 4)]
        for k in (1, 2, 3, 4):
            p = points.get(f"{held}{k}")
            if p is None:
                continue
            got = int(np.argmin([((p - p.mean() - c) ** 2).sum() for c in cents])) + 1
            hits, total = hits + (got == k), total + 1
    return hits / total if total else 0.0


def tone_tables(contour_of, targets: list[str]) -> tuple[np.ndarray, float, np.ndarray]:
    """(v3 table, tone separability, mean centred five-point contour per tone) from
    ``contour_of(target) -> (times, st, edges)``."""
    rule, points = np.zeros((4, 5), int), {}
    for target in targets:
        times, st, edges = contour_of(target)
        got = classify(times, st, edges, classify_v2)
        rule[int(target[-1]) - 1, (got or 5) - 1] += 1
        span = (times >= edges[1]) & (times <= edges[3]) & ~np.isnan(st)
        if span.sum() >= 5:
            points[target] = five_points(st[span])
    means = np.array([np.mean([p - p.mean() for t, p in points.items() if t[-1] == str(k)]
                              or [np.zeros(5)], axis=0) for k in (1, 2, 3, 4)])
    return rule, separability(points), means


def tones(services, voices: list[str], final: bool = True) -> None:
    targets = [f"{base}{tone}" for base in BASES for tone in (1, 2, 3, 4)]
    where = "phrase-final (v3)" if final else "mid-sentence 请读X这个字。 (v2 rule)"
    print(f"\n1. Tone check: {len(targets)} {where} targets, model durations")
    manager = services.manager
    results = {}
    for voice in voices:
        if voice == "baker":
            zh, vocoder = manager.get("acoustic_zh"), manager.get("vocoder")

            def contour_of(t, zh=zh, vocoder=vocoder):
                return contour(zh, vocoder, t, final=final)
        else:
            model = manager.get("kokoro")
            session = kokoro_probe(model)

            def contour_of(t, session=session, model=model, voice=voice):
                return kokoro_contour(session, model, voice, t, final)
        rule, sep, means = tone_tables(contour_of, targets)
        results[voice] = (print_table(f"{voice}, {where}", rule), sep)
        print(f"tone separability (leave-one-base-out, chance 25 %): {sep:.1%}")
        print("mean contour per tone, st re its own mean, 5 points: " + "; ".join(
            f"T{k + 1} " + " ".join(f"{v:+.1f}" for v in means[k]) for k in range(4)),
            flush=True)
    print(f"\ntone accuracy {where} / separability: " + ", ".join(
        f"{v} {a:.0%}/{b:.0%}" for v, (a, b) in results.items()))


def quality(synth, voices: list[str], n: int, runs: int) -> None:
    from cosyvoice.pipeline import SynthesisRequest

    print(f"\n2./3. DNSMOS over {n} unseen sentences; the 30-character sentence")
    print(f"{'voice':<13}{'OVRL':>6}{'SIG':>6}{'BAK':>6}  |  30 chars: {'s':>5}{'gap s':>7}"
          f"{'OVRL':>6}{'RTF':>7}")
    for voice in voices:
        scores = []
        for text in ZH[:n]:
            r = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
            scores.append(dnsmos(r.wav, r.sample_rate))
        mean = {k: float(np.mean([s[k] for s in scores])) for k in ("ovrl", "sig", "bak")}
        xs = []
        for _ in range(runs + 1):  # the first run warms caches
            t = time.perf_counter()
            r = synth.synthesize(SynthesisRequest(text=SENTENCE_30, voice=voice, seed=1))
            xs.append((time.perf_counter() - t) / r.duration_s)
        gap = longest_inner_silence(r.wav, r.sample_rate)
        long_ovrl = dnsmos(r.wav, r.sample_rate)["ovrl"]
        print(f"{voice:<13}{mean['ovrl']:6.2f}{mean['sig']:6.2f}{mean['bak']:6.2f}  |  "
              f"{'':>10}{r.duration_s:5.2f}{gap:7.2f}{long_ovrl:6.2f}{median(xs[1:]):7.3f}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default=",".join(DEFAULT_VOICES))
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], help="parts to skip: tones quality")
    parser.add_argument("--mid", action="store_true", help="tone check in the mid-sentence "
                        "carrier 请读X这个字。 instead of the phrase-final one")
    args = parser.parse_args()
    from tests.conftest import local_services

    voices = [v.strip() for v in args.voices.split(",") if v.strip()]
    print(f"machine: {machine()}")
    services = local_services(Path(tempfile.mkdtemp(prefix="bench-zh-voices-")))
    if "tones" not in args.skip:
        tones(services, voices, final=not args.mid)
    if "quality" not in args.skip:
        quality(services.synth, voices, args.sentences, args.runs)


if __name__ == "__main__":
    main()
