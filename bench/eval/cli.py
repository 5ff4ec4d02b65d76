"""``python -m bench eval``: score engines, voices and modes on the fixed test set.

    nice -n 5 .venv/bin/python -m bench eval [--quick] [--rows af_heart,clone,...]
        [--sentences N] [--cases a,b] [--no-long] [--out DIR] [--list]

Each row renders in a fresh process (bench/eval/render.py), then is scored here: WER/CER by
Whisper (the app's recognizer code), speaker similarity to held-out clips by GE2E and the
d-vector encoder (cloning rows), DNSMOS OVRL, RTF, CPU seconds per audio second, first-chunk
latency, peak RSS. Writes ``bench/out/eval/eval-<time>.{json,md}`` and ``latest.*``, and
prints the table. ``--quick``: a smoke run of a few minutes (af_heart, zm_yunxi, one clone
case; 2 sentences per part, 1 mixed, no long-form).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from bench._common import ROOT, cpu_info
from bench.eval import report, rows, testset
from bench.eval.metrics import Scorer
from bench.eval.render import Job, render_in_child
from bench.eval.score import ceiling, failed, score_output, summarize

logger = logging.getLogger(__name__)

OUT_DIR = ROOT / "bench" / "out" / "eval"
QUICK = {"sentences": 2, "mixed": 1, "cases": ["cate_blanch"], "per_case": 1}
NORMALIZATION = ("seed-tts-eval's normalisation: punctuation removed (apostrophe kept), "
                 "lower case, Mandarin per character, mean of per-utterance rates; digits "
                 "spelled by the app's number readers on both sides, punctuation → space")
TIMING_NOTE = ("Quality columns (WER/CER, similarity, DNSMOS) are deterministic; timing "
               "columns (RTF, CPU-s/s, first chunk) depend on the machine's load and are "
               "provisional on a shared machine; peak RSS is the rendering process's VmHWM.")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench eval",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run of a few minutes")
    ap.add_argument("--rows", default="", help="comma-separated rows (--list shows them)")
    ap.add_argument("--sentences", type=int, default=None, help="at most N texts per part")
    ap.add_argument("--cases", default="", help="comma-separated cloning cases")
    ap.add_argument("--per-case", type=int, default=None, help="sentences per cloning case")
    ap.add_argument("--no-long", action="store_true", help="skip the long-form passages")
    ap.add_argument("--asr-en", default="whisper-tiny.en", help="recognizer of English items")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    ap.add_argument("--list", action="store_true", help="list the rows and exit")
    return ap.parse_args(argv)


def plan(args, ts: testset.TestSet, selected: list[rows.Row], cases,
         prompts: dict[str, Path]) -> dict[str, list[Job]]:
    """Row name → the jobs it renders (``prompts``: each cloning case's prompt file)."""
    limit = QUICK["sentences"] if args.quick and args.sentences is None else args.sentences
    per_case = args.per_case or (QUICK["per_case"] if args.quick else None)
    jobs: dict[str, list[Job]] = {}
    for row in selected:
        if row.clones:
            items = ts.items(row.clone_part, per_case or row.per_case)
            jobs[row.name] = [Job(i.id, i.lang, i.text, c.name, str(prompts[c.name]))
                              for c in cases for i in items]
            continue
        parts = [p for p in row.parts if not (p.startswith("long") and (args.no_long
                                                                         or args.quick))]
        jobs[row.name] = [Job(i.id, i.lang, i.text) for p in parts
                          for i in ts.items(p, _limit(row, p, limit, args.quick))]
    return jobs


def _limit(row: rows.Row, part: str, limit: int | None, quick: bool) -> int | None:
    """How many texts of ``part`` the row speaks: the smallest of the limits that apply."""
    limits = [n for n in (limit, row.limit, QUICK["mixed"] if quick and part == "mixed" else None)
              if n is not None]
    return min(limits) if limits else None


def prepared_cases(ts: testset.TestSet, names: list[str], folder: Path):
    """The cloning cases, and each one's prompt written as a WAV file (the app takes files)."""
    from cosyvoice.audio.io import write_wav_atomic

    cases = testset.clone_cases(names or list(ts.clone_cases))
    folder.mkdir(parents=True, exist_ok=True)
    return cases, {c.name: write_wav_atomic(folder / f"{c.name}.wav", *c.prompt) for c in cases}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.list:
        for r in rows.ROWS:
            print(f"{r.name:14s} {r.label}")
        return 0
    names = args.rows.split(",") if args.rows else (list(rows.QUICK_ROWS) if args.quick
                                                      else None)
    try:
        selected = rows.select(names)
    except ValueError as e:
        print(f"python -m bench eval: {e}", file=sys.stderr)
        return 2
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    ts = testset.load()
    scorer = Scorer(ROOT / "models", asr_en=args.asr_en)
    case_names = args.cases.split(",") if args.cases else (QUICK["cases"] if args.quick
                                                           else [])
    cases, prompts = (prepared_cases(ts, case_names, args.out / "prompts")
                      if any(r.clones for r in selected) else ([], {}))
    refs = {c.name: [scorer.embeddings(w, sr) for w, sr in c.heldout] for c in cases}
    jobs = plan(args, ts, selected, cases, prompts)
    name, results = report.run_name(), []

    def save(complete: bool) -> tuple[Path, Path]:
        doc = {"quick": args.quick, "complete": complete, "date": report.stamp(),
               "commit": report.commit(), "machine": cpu_info(),
               "load": {"start": load0, "end": os.getloadavg()[0]},
               "testset": {"version": ts.version, "sha256": ts.sha256,
                           "used": _used(jobs, cases)},
               "asr": dict(scorer.asr_names), "normalization": NORMALIZATION,
               "timing_note": TIMING_NOTE, "wall_s": round(time.perf_counter() - t0, 1),
               "columns": {k: h for k, (h, _) in report.COLUMNS.items()}, "rows": results}
        paths = report.write(doc, args.out, name)
        if complete:
            print("\n" + report.markdown(doc))
        return paths

    run_rows(selected, jobs, scorer, refs, results, lambda: save(False))
    if cases:
        results.append(ceiling(cases, scorer, refs))
    json_path, md_path = save(True)
    print(f"[eval] wrote {json_path} and {md_path}")
    return 1 if any("error" in r for r in results) else 0


def run_rows(selected: list[rows.Row], jobs: dict[str, list[Job]], scorer: Scorer,
             refs: dict, results: list[dict], after_row) -> None:
    """Render each row in its own process, then score it here, appending to ``results``
    (``after_row()`` after each); a row whose process fails is reported with its error and
    the others still run."""
    for row in selected:
        print(f"[eval] {row.name}: {len(jobs[row.name])} texts ...", flush=True)
        try:
            audio = render_in_child(row, jobs[row.name])
        except Exception as e:
            logger.exception("row %s failed", row.name)
            results.append(failed(row, e))
        else:
            items = [score_output(o, scorer, refs.get(o.job.case)) for o in audio.outputs]
            results.append(summarize(row, audio, items))
            print("\n".join(report.table(results[-1:])[2:]), flush=True)
            print(result_line(results[-1]), flush=True)
        after_row()


def result_line(row: dict) -> str:
    """``RESULT eval_<row>_<column>=value ...`` for bench/collect.py (figures, no targets)."""
    values = {k: v for k, v in row["summary"].items() if k in report.COLUMNS and v is not None}
    return "RESULT " + " ".join(f"eval_{row['name']}_{k}={v:g}" for k, v in values.items())


def _used(jobs: dict[str, list[Job]], cases) -> dict[str, str]:
    parts = sorted({j.item.split("/")[0] for js in jobs.values() for j in js})
    used = {"parts": ", ".join(parts)}
    if cases:
        used["cloning cases"] = ", ".join(c.name for c in cases)
    return used
