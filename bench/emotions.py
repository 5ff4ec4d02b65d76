"""Do instructions move the prosody the way they say? Emotions and speed/volume/pitch words.

    nice -n 5 .venv/bin/python bench/emotions.py [--quick]

For three voices — Piper joe (English text, English instructions), Baker FastSpeech2
(Chinese text, Chinese instructions) and clone mode (joe's English cloned toward a real
female prompt, English instructions) — each instruction is rendered on two sentences and
compared with the neutral rendering of the same sentences (same seed):

- F0 median, semitones re neutral (autocorrelation pitch, floor/ceiling set from the
  voice's neutral median: ×0.7 … ×2.2, so octave errors stay out of the range figure:
  with ×0.5 joe's 93 Hz neutral measured a 14.8 st range from sub-octave frames);
- F0 range, the 5–95 % spread of voiced frames in semitones, as a ratio to neutral;
- speaking rate, neutral active-speech time / this active-speech time (frames within
  35 dB of the loudest; > 1 faster);
- RMS level of the active frames, dB re neutral.

The expected direction of each cell comes from the rule table the app applies
(:mod:`cosyvoice.prosody.style`, i.e. Murray & Arnott 1993 / Schröder 2001 / Banse & Scherer
1996 as encoded there): +, − or · (no change asked: not scored). A scored cell PASSes when
the measurement moves past a small dead zone (0.3 st, 3 % range, 2 % rate, 0.5 dB) in the
expected direction. Last line: ``RESULT emotions_directions_ok=<n>/<total>``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, make_synthesizer, real_prompt  # noqa: E402
from cosyvoice.pipeline import SynthesisRequest  # noqa: E402
from cosyvoice.prosody.instruct import parse_instruction  # noqa: E402
from cosyvoice.prosody.style import Style  # noqa: E402

EN_TEXTS = ["The birch canoe slid on the smooth planks.",
            "Rice is often served in round bowls."]
ZH_TEXTS = ["今天早上天气很好，我们一起去公园散步。", "请把桌子上的杯子递给我。"]
EN_INSTRUCTIONS = [
    ("happy", "speak happily"), ("sad", "sadly"), ("angry", "angry"),
    ("surprised", "surprised"), ("fearful", "fearful"), ("disgusted", "disgusted"),
    ("calm", "calmly"), ("gentle", "gently"), ("excited", "excited"), ("serious", "serious"),
    ("faster", "faster"), ("slower", "slower"), ("louder", "louder"), ("quieter", "quieter"),
    ("higher", "higher pitch"), ("lower", "lower pitch"),
]
ZH_INSTRUCTIONS = [
    ("happy", "开心地说"), ("sad", "悲伤地朗读"), ("angry", "生气地说"), ("surprised", "惊讶地说"),
    ("fearful", "害怕地说"), ("disgusted", "厌恶地说"), ("calm", "平静地说"),
    ("gentle", "温柔地说"), ("excited", "兴奋地说"), ("serious", "严肃地说"),
    ("faster", "语速快"), ("slower", "语速慢"), ("louder", "大声"), ("quieter", "小声"),
    ("higher", "提高音调"), ("lower", "降低音调"),
]
DEAD_ZONE = {"f0": 0.3, "range": 0.03, "rate": 0.02, "rms": 0.5}
COLUMNS = ("f0", "range", "rate", "rms")


# ---- measurement ------------------------------------------------------------------------
def active_frames(wav: np.ndarray, sr: int, floor_db: float = -35.0) -> np.ndarray:
    """10 ms frame RMS values within ``floor_db`` of the loudest frame."""
    hop = int(0.01 * sr)
    n = len(wav) // hop
    rms = np.sqrt(np.mean(wav[: n * hop].reshape(n, hop).astype(np.float64) ** 2, 1) + 1e-12)
    db = 20 * np.log10(rms)
    return rms[db > db.max() + floor_db]


def f0_semitones(wav: np.ndarray, sr: int, floor: float, ceiling: float) -> np.ndarray:
    import parselmouth

    snd = parselmouth.Sound(wav.astype(np.float64), sampling_frequency=sr)
    f0 = snd.to_pitch_ac(time_step=0.01, pitch_floor=floor, pitch_ceiling=ceiling)
    f0 = f0.selected_array["frequency"]
    return 12 * np.log2(f0[f0 > 0])


def measure(wavs: list[np.ndarray], sr: int, floor: float, ceiling: float) -> dict:
    st = np.concatenate([f0_semitones(w, sr, floor, ceiling) for w in wavs])
    act = np.concatenate([active_frames(w, sr) for w in wavs])
    return {"f0": float(np.median(st)),
            "range": float(np.percentile(st, 95) - np.percentile(st, 5)),
            "time": 0.01 * len(act),
            "rms": float(20 * np.log10(np.sqrt(np.mean(act ** 2))))}


def relative(m: dict, neutral: dict) -> dict:
    return {"f0": m["f0"] - neutral["f0"], "range": m["range"] / neutral["range"],
            "rate": neutral["time"] / m["time"], "rms": m["rms"] - neutral["rms"]}


def expected(instruction: str, table) -> dict:
    """+1 / -1 / 0 per column from the rules the app applies to this instruction."""
    s = Style.from_instruction(parse_instruction(instruction), table)

    def sign(x: float, eps: float = 1e-6) -> int:
        return 0 if abs(x) < eps else (1 if x > 0 else -1)

    return {"f0": sign(s.pitch_st), "range": sign(np.log(s.range_factor)),
            "rate": sign(np.log(s.rate)), "rms": sign(s.gain_db)}


def verdict(value: float, want: int, column: str) -> bool | None:
    if want == 0:
        return None
    centre = 1.0 if column in ("range", "rate") else 0.0
    return (value - centre) * want > DEAD_ZONE[column]


# ---- running ------------------------------------------------------------------------------
def render(synth, texts, voice, instruction, prompt) -> tuple[list[np.ndarray], int]:
    wavs, sr = [], 0
    for text in texts:
        kw = {"prompt_path": str(prompt), "mode": "instruct" if instruction else "clone"} \
            if prompt else {"voice": voice, "mode": "instruct" if instruction else "preset"}
        r = synth.synthesize(SynthesisRequest(text=text, instruction=instruction, seed=1,
                                              **kw))
        wavs.append(r.wav)
        sr = r.sample_rate
    return wavs, sr


def run_voice(synth, label, texts, voice, instructions, prompt=None) -> list[tuple]:
    t0 = time.perf_counter()
    base_wavs, sr = render(synth, texts, voice, "", prompt)
    st0 = np.median(np.concatenate([f0_semitones(w, sr, 50, 700) for w in base_wavs]))
    hz0 = 2 ** (st0 / 12)
    floor, ceiling = 0.7 * hz0, 2.2 * hz0
    neutral = measure(base_wavs, sr, floor, ceiling)
    rows = []
    for name, instruction in instructions:
        wavs, sr = render(synth, texts, voice, instruction, prompt)
        rel = relative(measure(wavs, sr, floor, ceiling), neutral)
        want = expected(instruction, synth.emotion_rules)
        rows.append((label, name, instruction, rel, want))
    print(f"# {label}: neutral F0 median {hz0:.0f} Hz, range {neutral['range']:.1f} st, "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return rows


def cell(value: float, want: int, column: str) -> tuple[str, bool | None]:
    ok = verdict(value, want, column)
    text = f"{value:+.2f}" if column in ("f0", "rms") else f"×{value:.2f}"
    arrow = {1: "+", -1: "−", 0: "·"}[want]
    mark = "" if ok is None else (" PASS" if ok else " FAIL")
    return f"{text} ({arrow}){mark}", ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one sentence, 4 instructions")
    args = parser.parse_args()
    en, zh = EN_TEXTS, ZH_TEXTS
    en_ins, zh_ins = EN_INSTRUCTIONS, ZH_INSTRUCTIONS
    if args.quick:
        en, zh = en[:1], zh[:1]
        en_ins = [e for e in en_ins if e[0] in ("happy", "sad", "slower", "higher")]
        zh_ins = [z for z in zh_ins if z[0] in ("happy", "sad", "slower", "higher")]
    print(f"# machine: {machine()}")
    synth = make_synthesizer()
    rows = run_voice(synth, "joe (en)", en, "joe", en_ins)
    rows += run_voice(synth, "baker (zh)", zh, "baker", zh_ins)
    rows += run_voice(synth, "clone (en→cate)", en, "joe", en_ins, prompt=real_prompt())
    print()
    print("| voice | instruction | F0 median st (exp) | F0 range 5–95 % (exp) | "
          "rate (exp) | RMS dB (exp) |")
    print("|---|---|---|---|---|---|")
    passed = total = 0
    for label, _name, instruction, rel, want in rows:
        cells = []
        for column in COLUMNS:
            text, ok = cell(rel[column], want[column], column)
            cells.append(text)
            if ok is not None:
                total += 1
                passed += int(ok)
        print(f"| {label} | {instruction} | " + " | ".join(cells) + " |")
    print()
    print(f"RESULT emotions_directions_ok={passed}/{total}")


if __name__ == "__main__":
    main()
