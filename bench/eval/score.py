"""Score a rendered row: each output transcribed and rated, then the row's summary and its
per-part figures (the columns of :mod:`bench.eval.report`)."""

from __future__ import annotations

import statistics
from collections import defaultdict

import numpy as np

from bench.eval.metrics import Scorer, error_rate
from bench.eval.render import Output, RowAudio
from bench.eval.rows import Row

PART_KEYS = {"en": "wer_en", "zh": "cer_zh", "mixed": "mixed", "long_en": "long",
             "long_zh": "long"}


def score_output(out: Output, scorer: Scorer, refs: list | None) -> dict:
    """One output's figures (``refs``: the case's held-out embeddings, cloning rows)."""
    job = out.job
    item = {"id": job.item, "part": job.item.split("/")[0], "lang": job.lang, "case": job.case,
            "text": job.text, "audio_s": round(out.audio_s, 3), "wall_s": out.wall_s,
            "cpu_s": out.cpu_s, "first_chunk_s": out.first_chunk_s, "notes": out.notes}
    if out.error or not len(out.wav):
        return {**item, "error": out.error or "no audio"}
    transcript = scorer.transcribe(out.wav, out.sample_rate, job.lang)
    errors, n = error_rate(job.text, transcript)
    item.update(transcript=transcript, errors=errors, tokens=n,
                error_rate=round(100.0 * errors / max(n, 1), 2),
                dnsmos=round(scorer.dnsmos_ovrl(out.wav, out.sample_rate), 4))
    if refs:
        sim = scorer.similarity(out.wav, out.sample_rate, refs)
        item.update(ge2e=round(sim.ge2e, 4), dvector=round(sim.dvector, 4))
    return item


def _mean(xs: list[float]) -> float | None:
    return round(float(np.mean(xs)), 4) if xs else None


def _timing(items: list[dict]) -> dict:
    audio = sum(i["audio_s"] for i in items)
    firsts = [i["first_chunk_s"] for i in items if "error" not in i]
    return {"rtf": round(sum(i["wall_s"] for i in items) / audio, 4) if audio else None,
            "cpu_rtf": round(sum(i["cpu_s"] for i in items) / audio, 4) if audio else None,
            "first_chunk_s": round(statistics.median(firsts), 3) if firsts else None}


def _similarity(items: list[dict], key: str) -> float | None:
    """Per-case means, averaged over the cases (each speaker counts once)."""
    by_case = defaultdict(list)
    for i in items:
        if key in i:
            by_case[i["case"]].append(i[key])
    return _mean([float(np.mean(v)) for v in by_case.values()])


def summarize(row: Row, audio: RowAudio, items: list[dict]) -> dict:
    ok = [i for i in items if "error" not in i]
    parts = defaultdict(list)
    for i in ok:
        parts[i["part"]].append(i)
    summary = {key: None for key in (*PART_KEYS.values(), "ge2e", "dvector")}
    for part, its in parts.items():
        summary[PART_KEYS[part]] = _mean([i["error_rate"] for i in its])
    summary.update(ge2e=_similarity(ok, "ge2e"), dvector=_similarity(ok, "dvector"),
                   dnsmos=_mean([i["dnsmos"] for i in ok]), **_timing(ok),
                   peak_rss_mb=audio.peak_rss_mb, failed=len(items) - len(ok))
    per_part = {part: {"n": len(its), "error_rate": _mean([i["error_rate"] for i in its]),
                       "dnsmos": _mean([i["dnsmos"] for i in its]), **_timing(its)}
                for part, its in parts.items()}
    return {"name": row.name, "label": row.label, "note": row.note, "mode": row.mode,
            "voice": row.voice, "engine": row.engine, "summary": summary, "parts": per_part,
            "load": [audio.load_before, audio.load_after], "warmup_s": audio.warmup_s,
            "items": items}


def failed(row: Row, error: Exception) -> dict:
    """A row whose rendering process failed: its error, no figures."""
    return {"name": row.name, "label": row.label, "note": row.note, "mode": row.mode,
            "voice": row.voice, "engine": row.engine, "summary": {},
            "error": f"{type(error).__name__}: {error}", "items": []}


def ceiling(cases, scorer: Scorer, refs: dict) -> dict:
    """The prompt itself against its held-out clips: what a perfect copy of the prompt would
    reach (similarity columns only)."""
    items = []
    for case in cases:
        sim = scorer.similarity(*case.prompt, refs[case.name])
        items.append({"case": case.name, "ge2e": round(sim.ge2e, 4),
                      "dvector": round(sim.dvector, 4)})
    summary = {"ge2e": _similarity(items, "ge2e"), "dvector": _similarity(items, "dvector")}
    return {"name": "prompt (ceiling)", "label": "each case's prompt against its held-out "
            "clips: what a perfect copy of the prompt would score", "summary": summary,
            "items": items}
