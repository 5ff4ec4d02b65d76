"""Cross-lingual cloning: does a prompt in one language move the voice of text in the other?

Two directions, in-process with the real models (``Synthesizer``, mode ``cross_lingual``):

- ``zh_from_en``: **real English prompts** (gradio's ``cate_blanch.mp3``,
  ``cate_blanch_2.mp3``: a female film voice) speaking Chinese text; the unadapted voice
  is the preset voice of the text's language, *baker*.
- ``en_from_zh``: Chinese prompts speaking English text; unadapted: *joe*. No real Mandarin
  recording ships in any package reachable here (searched: Debian apt lists, PyPI names
  for Mandarin speech data), so these prompts are **synthetic, labelled as such**: *baker*
  reading a Chinese passage, moved to another voice by Praat's "Change gender" (formant
  shift ratio and new pitch median; two settings: a lower male-like and a higher voice).

Score: GE2E cosine similarity (the project's SpeakerEncoder) of each output to its prompt;
gain = mean(adapted) − mean(unadapted) per direction. Target: ≥ +0.08 each. Audio goes to
``bench/out/cross_lingual/`` for listening.

Run: ``nice -n 5 .venv/bin/python bench/cross_lingual.py [--device cpu]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, make_synthesizer, real_prompt  # noqa: E402
from cosyvoice.audio.io import read_audio, to_mono, write_wav_atomic  # noqa: E402
from cosyvoice.pipeline import SynthesisRequest  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent / "out" / "cross_lingual"
TEXTS = {
    "en": ("The old lighthouse keeper climbed the narrow stairs every evening.",
           "She bought fresh bread and two green apples before walking home."),
    "zh": ("我们明天早上八点在学校门口集合。", "这家小饭馆的饺子特别好吃，价格也很便宜。"),
}
PRESET_FOR = {"en": "joe", "zh": "baker"}
# The synthetic Mandarin prompts' source passage (not one of TEXTS, not calibration text).
ZH_PROMPT_TEXT = ("小时候，我最喜欢跟着爷爷去河边钓鱼。他总是很有耐心，一坐就是一个下午。"
                  "夕阳下山的时候，我们提着装满小鱼的水桶，慢慢地走回家。")
# Praat "Change gender": (formant shift ratio, new pitch median Hz); synthetic voices.
ZH_VOICES = {"zh_synth_low": (0.86, 120.0), "zh_synth_high": (1.12, 290.0)}
TARGET_GAIN = 0.08


def synthetic_zh_prompts(synth) -> dict[str, Path]:
    """Baker reads ZH_PROMPT_TEXT; Praat's "Change gender" makes two other voices."""
    import parselmouth
    from parselmouth.praat import call

    base = synth.synthesize(SynthesisRequest(text=ZH_PROMPT_TEXT, voice="baker", seed=0))
    out = {}
    for name, (formant_ratio, pitch_hz) in ZH_VOICES.items():
        snd = parselmouth.Sound(base.wav.astype(np.float64), base.sample_rate)
        moved = call(snd, "Change gender", 75, 600, formant_ratio, pitch_hz, 1.0, 1.0)
        wav = np.asarray(moved.values[0], np.float32)
        wav = 0.9 * wav / max(float(np.abs(wav).max()), 1e-6)
        out[name] = write_wav_atomic(OUT_DIR / f"prompt_{name}.wav", wav, base.sample_rate)
    return out


def similarity(encoder, wav: np.ndarray, sr: int, ref: np.ndarray) -> float:
    return float(np.dot(encoder.embed(wav, sr), ref))


def run_direction(synth, encoder, prompts: dict[str, Path], lang: str) -> float:
    """Mean GE2E gain (cross_lingual − preset of ``lang``) over prompts × TEXTS[lang]."""
    gains = []
    for name, path in prompts.items():
        wav, sr = read_audio(path)
        ref = encoder.embed(to_mono(wav), sr)
        adapted, plain = [], []
        for i, text in enumerate(TEXTS[lang]):
            a = synth.synthesize(SynthesisRequest(text=text, mode="cross_lingual",
                                                  prompt_path=str(path), seed=0))
            p = synth.synthesize(SynthesisRequest(text=text, voice=PRESET_FOR[lang], seed=0))
            adapted.append(similarity(encoder, a.wav, a.sample_rate, ref))
            plain.append(similarity(encoder, p.wav, p.sample_rate, ref))
            write_wav_atomic(OUT_DIR / f"{lang}_from_{name}_{i}.wav", a.wav, a.sample_rate)
        gain = float(np.mean(adapted) - np.mean(plain))
        gains.append(gain)
        print(f"  {name:>15} → {lang}: adapted {np.mean(adapted):.3f}, "
              f"{PRESET_FOR[lang]} {np.mean(plain):.3f}, gain {gain:+.3f}")
    return float(np.mean(gains))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"machine: {machine()}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    synth = make_synthesizer(args.device)
    encoder = synth.manager.get("speaker_encoder")
    en_prompts = {n: real_prompt(f"{n}.mp3") for n in ("cate_blanch", "cate_blanch_2")}
    print("English prompts (real) speaking Chinese:")
    zh_from_en = run_direction(synth, encoder, en_prompts, "zh")
    print("Chinese prompts (SYNTHETIC: baker + Praat Change gender) speaking English:")
    en_from_zh = run_direction(synth, encoder, synthetic_zh_prompts(synth), "en")
    for name, gain in (("en_from_zh", en_from_zh), ("zh_from_en", zh_from_en)):
        print(f"{name}: gain {gain:+.3f} (target ≥ +{TARGET_GAIN}) "
              f"{'PASS' if gain >= TARGET_GAIN else 'FAIL'}")
    print(f"RESULT xling_en_from_zh={en_from_zh:+.3f} xling_zh_from_en={zh_from_en:+.3f}")


if __name__ == "__main__":
    main()
