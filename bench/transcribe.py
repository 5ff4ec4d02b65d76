"""Prompt transcription: WER/CER of each recognizer on the bench prompts and on test prompts
of known text, and the seconds transcription adds (median per prompt length).

    python -m bench.transcribe [--recognizers whisper-base,whisper-tiny.en] [--json PATH]

Prompts:

- the cloning bench's prompt set (``bench/prompts.py``): real recordings (gradio's
  cate_blanch / heath_ledger, ALSA's channel names, Asterisk's Allison) and festival voices.
  References are known for ``alsa_channels`` and the festival ones; the others are listed
  without a WER (no reference transcript exists here).
- test prompts of known text, made here with the app's own voices (English: Piper joe and
  Kokoro voices; Mandarin: Baker FastSpeech2 and Kokoro's zh voices), short / medium / long.

Each prompt goes through ``cosyvoice.asr.service.transcribe_file`` (the app's path: prompt
checks, VAD trim, the ``asr`` model) with the language left to auto. English scores are
WER on lower-cased words; Mandarin scores are CER on Chinese characters. Seconds are wall
time on a shared 2-core machine (noisy): CPU seconds of the process are given too.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import tempfile
import time
from pathlib import Path

from bench._common import ROOT, machine, make_synthesizer, median
from bench._metrics import edit_distance, normalize_text, wer

OUT = ROOT / "bench" / "out" / "transcribe"
ALSA_TEXT = ("front left front center front right side left side right rear left rear center "
             "rear right")
EN_TEXTS = {
    "short": "Please call Stella and ask her to bring these things with her from the store.",
    "medium": ("The museum opens at nine in the morning. Children under twelve can visit for "
               "free with their parents."),
    "long": ("When the storm finally passed, the fishermen pulled their boats back into the "
             "water. The sea was calm again, and the gulls followed them out past the old "
             "lighthouse, hoping for an easy meal before the sun went down."),
}
ZH_TEXTS = {
    "short": "今天天气很好，我们一起去公园散步吧。",
    "medium": "这家小店的面条非常好吃，每天中午都有很多人排队，老板总是笑着跟客人打招呼。",
    "long": ("春天来了，山上的花都开了，红的像火，粉的像霞，白的像雪。孩子们在草地上放风筝，"
             "老人们坐在树下聊天，整个村子都充满了笑声，大家都觉得这是一年里最美的季节。"),
}
EN_VOICES = ("joe", "af_heart", "am_adam", "bf_emma")
ZH_VOICES = ("baker", "zf_xiaobei", "zm_yunjian")


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate (%) on Chinese characters (punctuation and spaces dropped)."""
    ref, hyp = (re.findall(r"[\u4e00-\u9fff]", s) for s in (reference, hypothesis))
    return 100.0 * edit_distance(ref, hyp) / max(len(ref), 1)


def test_prompts(folder: Path) -> list[dict]:
    """Synthesize the known texts with the app's voices (cached as WAV in ``folder``)."""
    from cosyvoice.audio.io import write_wav_atomic
    from cosyvoice.pipeline import SynthesisRequest

    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(v, "en", k, t) for v in EN_VOICES for k, t in EN_TEXTS.items()]
    jobs += [(v, "zh", k, t) for v in ZH_VOICES for k, t in ZH_TEXTS.items()]
    synth, out = None, []
    for voice, lang, size, text in jobs:
        path = folder / f"{voice}_{size}.wav"
        if not path.is_file():
            synth = synth or make_synthesizer()
            res = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
            write_wav_atomic(path, res.wav, res.sample_rate)
        out.append({"name": path.stem, "path": str(path), "lang": lang, "ref": text,
                    "kind": f"test ({voice}, {size})"})
    return out


def bench_prompts() -> list[dict]:
    from bench.prompts import FESTIVAL_TEXT, build_prompts

    refs = {"alsa_channels": ALSA_TEXT, "festival_kal": FESTIVAL_TEXT,
            "festival_ked": FESTIVAL_TEXT, "festival_slt": FESTIVAL_TEXT}
    return [{"name": p.name, "path": p.path, "lang": "en", "ref": refs.get(p.name),
             "kind": f"bench ({p.kind})"} for p in build_prompts()]


def run(recognizer: str, prompts: list[dict]) -> list[dict]:
    from cosyvoice.asr.service import transcribe_file
    from cosyvoice.bootstrap import shared_specs
    from cosyvoice.errors import CosyVoiceError
    from cosyvoice.lifecycle.manager import ModelManager
    from cosyvoice.settings import Settings

    settings = Settings(asr_model=recognizer, torch_threads=2)
    specs = [s for s in shared_specs(settings) if s.name in ("vad", "asr")]
    manager = ModelManager("cpu", specs)
    t0 = time.perf_counter()
    manager.load("asr")
    manager.load("vad")
    load_s = time.perf_counter() - t0
    rows = []
    for p in prompts:
        c0, w0 = time.process_time(), time.perf_counter()
        row = {"recognizer": recognizer, "load_s": round(load_s, 2), **p}
        try:
            tr = transcribe_file(manager, p["path"])
        except CosyVoiceError as e:
            row.update(error=str(e), cpu_s=round(time.process_time() - c0, 2),
                       seconds=round(time.perf_counter() - w0, 2))
            if getattr(e, "logprob", None) is not None:
                row["logprob"] = round(e.logprob, 3)
        else:
            row.update(tr.to_dict(), cpu_s=round(time.process_time() - c0, 2))
            score(row)
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def score(row: dict) -> None:
    """WER (English; numbers spelled by the app's English normalizer on both sides, so "9"
    and "nine" agree) or CER (Mandarin) of a row with a reference and a text."""
    from cosyvoice.frontend.en_normalize import normalize_en

    if row.get("ref") and "text" in row:
        row["score"] = round(cer(row["ref"], row["text"]) if row["lang"] == "zh" else
                             wer(normalize_en(row["ref"]), normalize_en(row["text"])), 1)


def _line(r: dict) -> str:
    head = f"{r['recognizer']:16s} {r['name']:18s} {r['lang']}"
    if "error" in r:
        lp = f", lp {r['logprob']:.2f}" if "logprob" in r else ""
        return f"{head}  REFUSED ({r['seconds']} s, {r['cpu_s']} cpu-s{lp}): {r['error'][:90]}"
    score = f"{'CER' if r['lang'] == 'zh' else 'WER'} {r['score']:5.1f}%" if "score" in r \
        else "no ref    "
    return (f"{head} {r['audio_s']:5.1f} s  {score}  {r['seconds']:5.2f} s wall "
            f"{r['cpu_s']:5.2f} cpu-s  [{r['language']} {r['language_probability']:.2f}, "
            f"lp {r['logprob']:.2f}]  {r['text'][:70]}")


def _units(r: dict) -> int:
    """Words (English) or Chinese characters (Mandarin) of a prompt's reference."""
    if r["lang"] == "zh":
        return len(re.findall(r"[\u4e00-\u9fff]", r["ref"]))
    return len(normalize_text(r["ref"]).split())


def summary(rows: list[dict]) -> list[str]:
    out = []
    for rec in sorted({r["recognizer"] for r in rows}):
        mine = [r for r in rows if r["recognizer"] == rec]
        for lang in ("en", "zh"):
            of_lang = [r for r in mine if r["lang"] == lang]
            scored = [r for r in of_lang if "score" in r]
            refused = len([r for r in of_lang if "error" in r])
            if scored:  # pooled: errors over all reference words (characters)
                rate = sum(r["score"] * _units(r) for r in scored) / sum(map(_units, scored))
                out.append(f"{rec} {lang}: {'WER' if lang == 'en' else 'CER'} {rate:.1f}% "
                           f"over {len(scored)} prompts; {refused} of {len(of_lang)} refused")
            elif refused:
                out.append(f"{rec} {lang}: {refused} of {len(of_lang)} refused")
        for lo, hi in ((0, 6), (6, 12), (12, 31)):
            done = [r for r in mine if "audio_s" in r and lo <= r["audio_s"] < hi]
            if done:
                wall = median([r["seconds"] for r in done])
                cpu = median([r["cpu_s"] for r in done])
                out.append(f"{rec} {lo}-{hi} s prompts: median {wall:.2f} s wall, "
                           f"{cpu:.2f} cpu-s (n={len(done)})")
        out.append(f"{rec}: model load {mine[0]['load_s']} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recognizers", default="whisper-base,whisper-tiny.en")
    ap.add_argument("--json", type=Path, default=OUT / "results.json")
    ap.add_argument("--rescore", action="store_true",
                    help="re-score and summarize the rows of --json instead of running")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.rescore:
        rows = json.loads(args.json.read_text())
        for row in rows:
            score(row)
            print(_line(row))
    else:
        prompts = bench_prompts() + test_prompts(OUT / "prompts")
        rows = [r for rec in args.recognizers.split(",") for r in run(rec, prompts)]
    print(f"\nmachine: {machine()}; cpu: {_cpu_model()}")
    print("\n".join(summary(rows)))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1))


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    tempfile.tempdir = None
    main()
