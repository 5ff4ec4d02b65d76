"""The harness's output: one JSON document and one markdown table of it.

Columns (``COLUMNS``): WER of the English sentences, CER of the Mandarin ones, the error rate
of the mixed sentences and of the long-form passage (each the mean of per-utterance rates),
speaker similarity of cloning rows to the held-out clips (GE2E, d-vector; per-case means
averaged over the cases), DNSMOS P.835 OVRL (mean), RTF (wall seconds over audio seconds,
all items), CPU seconds per audio second (less sensitive to a shared machine's load),
median first-chunk latency, and the rendering process's peak RSS.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from bench._common import ROOT

# key → (header, format); None values print as "—"
COLUMNS = {
    "wer_en": ("WER en %", "{:.1f}"),
    "cer_zh": ("CER zh %", "{:.1f}"),
    "mixed": ("mixed %", "{:.1f}"),
    "long": ("long %", "{:.1f}"),
    "ge2e": ("SIM GE2E", "{:.3f}"),
    "dvector": ("SIM d-vec", "{:.3f}"),
    "dnsmos": ("DNSMOS", "{:.2f}"),
    "rtf": ("RTF", "{:.3f}"),
    "cpu_rtf": ("CPU-s/s", "{:.3f}"),
    "first_chunk_s": ("1st chunk s", "{:.2f}"),
    "peak_rss_mb": ("peak RSS MB", "{:.0f}"),
}
PART_COLUMNS = ("n", "error_rate", "dnsmos", "rtf", "first_chunk_s")


def commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                       text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "?") + ("+changes" if dirty else "")


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _cell(key: str, value) -> str:
    if value is None:
        return "—"
    fmt = COLUMNS[key][1] if key in COLUMNS else "{}"
    return fmt.format(value) if isinstance(value, (int, float)) else str(value)


def table(rows: list[dict]) -> list[str]:
    head = ["row", *(h for h, _ in COLUMNS.values())]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * len(COLUMNS) + "|"]
    for r in rows:
        cells = [r["name"], *(_cell(k, r["summary"].get(k)) for k in COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def part_table(rows: list[dict]) -> list[str]:
    lines = ["| row | part | items | error % | DNSMOS | RTF | 1st chunk s |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        for part, p in r.get("parts", {}).items():
            lines.append(f"| {r['name']} | {part} | {p['n']} | {_fmt(p['error_rate'], 1)} | "
                         f"{_fmt(p['dnsmos'], 2)} | {_fmt(p['rtf'], 3)} | "
                         f"{_fmt(p['first_chunk_s'], 2)} |")
    return lines


def _fmt(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def markdown(doc: dict) -> str:
    m, ts = doc["machine"], doc["testset"]
    loads = ", ".join(f"{r['name']} {r['load'][0]:.1f}→{r['load'][1]:.1f}"
                      for r in doc["rows"] if r.get("load"))
    out = [f"# python -m bench eval{' --quick' if doc['quick'] else ''} · {doc['date']} · "
           f"commit {doc['commit']}" + ("" if doc["complete"] else " · (incomplete)"), "",
           f"- CPU: {m['model']}; {', '.join(m['flags']) or 'no AVX2'}; {m['cores']} cores, "
           f"{m['memory_gib']} GiB",
           f"- load average (1 min): start {doc['load']['start']:.1f}, end "
           f"{doc['load']['end']:.1f}; per row (before→after rendering): {loads}",
           f"- test set v{ts['version']} (sha256 {ts['sha256'][:12]}): "
           + ", ".join(f"{k} {v}" for k, v in ts["used"].items()),
           f"- recognizers: English {doc['asr']['en']}, Mandarin and mixed {doc['asr']['zh']}; "
           f"{doc['normalization']}",
           f"- wall time {doc['wall_s']:.0f} s. {doc['timing_note']}", "", *table(doc["rows"]),
           "", "Per part:", "", *part_table(doc["rows"]), ""]
    notes = [f"- **{r['name']}**: {r['label']}" + (f"; {r['note']}" if r.get("note") else "")
             + (f"; **failed**: {r['error']}" if r.get("error") else "") for r in doc["rows"]]
    return "\n".join(out + ["Rows:", "", *notes, ""])


def run_name() -> str:
    return "eval-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")


def write(doc: dict, out_dir: Path, name: str) -> tuple[Path, Path]:
    """``<name>.json`` and ``.md`` in ``out_dir``, also copied to ``latest.*`` (written after
    every row, so a long run that stops keeps what it measured; ``complete`` says whether
    every row ran)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text, md = json.dumps(doc, ensure_ascii=False, indent=1), markdown(doc)
    for base in (name, "latest"):
        (out_dir / f"{base}.json").write_text(text + "\n", "utf-8")
        (out_dir / f"{base}.md").write_text(md, "utf-8")
    return out_dir / f"{name}.json", out_dir / f"{name}.md"
