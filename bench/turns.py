"""The one-voice check (cosyvoice.speaker.turns) on every one-speaker clip at hand and on
two-speaker prompts built from them: false refusals and missed second voices.

    .venv/bin/python bench/turns.py [--voices af_heart,af_bella,...]

One speaker: the real recordings shipped with gradio (Cate Blanchett's two clips, alone and
joined; Heath Ledger, repeated with pauses; Cate with long pauses) and Kokoro voices reading
three sentences with pauses, at their own pace and then slowly and quickly. Two speakers:
real female + male joined 50/50, 70/30, 30/70 and taking turns; a real voice joined with a
Kokoro voice of the same sex; two Kokoro voices of the same sex, 50/50 and 70/30. Each row:
the similarity of the two groups' mean embeddings and what validation does with it
(refuse below ONE_VOICE_MIN, note below SAME_VOICE_NOTE, else pass).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine  # noqa: E402
from cosyvoice.audio.io import resample  # noqa: E402
from cosyvoice.speaker.turns import ONE_VOICE_MIN, SAME_VOICE_NOTE, split_voices  # noqa: E402
from tests.fixtures.make_prompts import load_real  # noqa: E402

SR = 16000
VOICES = ("af_heart,af_bella,af_sky,af_nicole,bf_emma,bf_isabella,"
          "am_adam,am_michael,am_echo,bm_george,bm_lewis,am_eric")
TEXTS = ("The fish twisted and turned on the bent hook.",
         "A large size in stockings is hard to sell, and the little tales they tell are false.",
         "Press the pants and sew a button on the vest before the guests arrive tonight.")


def gap(seconds: float = 0.3) -> np.ndarray:
    return np.zeros(int(seconds * SR), np.float32)


def cut(x: np.ndarray, seconds: float) -> np.ndarray:
    return x[:int(seconds * SR)]


def kokoro_clips(voices: list[str]) -> dict[str, np.ndarray]:
    """Each voice reading TEXTS with 0.5 s pauses, then the first slowly and the last quickly."""
    from cosyvoice.acoustic.kokoro import KokoroModel, voice_language

    model = KokoroModel.load()
    out = {}
    for voice in voices:
        speaker = model.speaker(voice, voice_language(voice))
        parts = []
        for text, speed in [*((t, 1.0) for t in TEXTS), (TEXTS[0], 0.8), (TEXTS[2], 1.3)]:
            wav = speaker.synthesize(text, speed=speed)
            parts += [resample(wav.wav, wav.sample_rate, SR), gap(0.5)]
        out[voice] = np.concatenate(parts[:-1])
    return out


def cases(kokoro: dict[str, np.ndarray]) -> tuple[dict, dict]:
    f, f2, m = (load_real(n) for n in ("cate_blanch.mp3", "cate_blanch_2.mp3",
                                       "heath_ledger.mp3"))
    one = {"real F (Cate)": f, "real F, second clip": f2,
           "real F, two recordings": np.concatenate([f, gap(), f2]),
           "real F with 1.2 s pauses": np.concatenate(
               [p for piece in np.array_split(f, 4) for p in (piece, gap(1.2))][:-1]),
           "real M (Heath) twice": np.concatenate([m, gap(0.5), m]),
           "real M three times, 1 s pauses": np.concatenate([m, gap(1.0), m, gap(1.0), m])}
    one.update({f"Kokoro {v}": wav for v, wav in kokoro.items()})
    two = {"real F+M 50/50": np.concatenate([cut(f, 3.5), gap(), m]),
           "real F+M 70/30": np.concatenate([f, gap(), m]),
           "real M+F 30/70": np.concatenate([m, gap(), f]),
           "real F/M taking turns": np.concatenate([f[:2 * SR], gap(), m[:2 * SR], gap(),
                                                    f[2 * SR:4 * SR], gap(), m[2 * SR:]])}
    women = [v for v in kokoro if v[1] == "f"]
    men = [v for v in kokoro if v[1] == "m"]
    for v in women:
        two[f"real F + Kokoro {v}"] = np.concatenate([cut(f, 6), gap(), cut(kokoro[v], 6)])
    for v in men:
        two[f"real M + Kokoro {v}"] = np.concatenate([m, gap(), cut(kokoro[v], 3.5)])
    for a, b in [*itertools.combinations(women, 2), *itertools.combinations(men, 2)]:
        two[f"Kokoro {a}+{b} 50/50"] = np.concatenate([cut(kokoro[a], 6), gap(),
                                                       cut(kokoro[b], 6)])
        two[f"Kokoro {a}+{b} 70/30"] = np.concatenate([cut(kokoro[a], 9), gap(),
                                                       cut(kokoro[b], 4)])
    return one, two


def verdict(similarity: float) -> str:
    if similarity < ONE_VOICE_MIN:
        return "refused"
    return "note" if similarity < SAME_VOICE_NOTE else "pass"


def main() -> int:
    from cosyvoice.speaker.encoder import SpeakerEncoder
    from cosyvoice.speaker.vad import SileroVad

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--voices", default=VOICES)
    args = ap.parse_args()
    print(f"machine: {machine()}; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    vad, encoder = SileroVad.load(), SpeakerEncoder.load()
    one, two = cases(kokoro_clips([v for v in args.voices.split(",") if v]))
    tally = {}
    for kind, group in (("one speaker", one), ("two speakers", two)):
        print(f"\n{kind}:")
        for name, wav in group.items():
            split = split_voices(wav, SR, vad, encoder)
            sim = 1.0 if split is None else split.similarity
            tally.setdefault(kind, []).append(verdict(sim))
            print(f"  {name:42s} {sim:5.2f}  {verdict(sim)}")
    one_v, two_v = tally["one speaker"], tally["two speakers"]
    print(f"\nRESULT one speaker: {one_v.count('refused')}/{len(one_v)} refused (false), "
          f"{one_v.count('note')} noted · two speakers: {two_v.count('refused')}/{len(two_v)} "
          f"refused, {two_v.count('note')} noted, {two_v.count('pass')} missed "
          f"(refuse < {ONE_VOICE_MIN}, note < {SAME_VOICE_NOTE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
