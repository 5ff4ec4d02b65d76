"""Train the learned map of cloning v2 (issue #24 item 5): GE2E embedding → blend weights
over Kokoro's English voices, learned on synthetic blends of those voices.

    nice -n 5 .venv/bin/python -m cosyvoice.tools.train_clone_map [--blends 160] [--seed 0]
        [--out cosyvoice/voice/clone_map_en.npz] [--data /tmp/clone_map_data.npz]

Data: ``--blends`` random blends (2–3 voices drawn at random, Dirichlet(1) weights) plus
every single voice; each speaks one sentence of the setup set (chosen per blend, so none
of the bench's sentences), and GE2E embeds the audio. Model: ridge regression from the
unit embedding (and a bias) to the blend's weight vector, ``lambda`` chosen by 5-fold
cross-validation on the weight error. At use the prediction is clipped at 0, its top 3
kept and normalized (:class:`cosyvoice.voice.space.CloneMap`). The artefact is a float32
``(V, 257)`` matrix, the voice names, the language and the
:func:`~cosyvoice.voice.space.space_key` of the weights it was trained with (~23 KB).
``--data`` keeps the embedded clips (X, Y) in a file, read back instead of synthesizing
them again when it exists (to refit).

Trained once (2026-12-06) with ``--blends 100`` (1287 s wall on 2 shared cores): the map
beat the nearest voices' blend on held-out clips only by mixing in voices of the other
sex, and lost when kept to the prompt's sex, so the artefact is not committed and the
engine does not use it (docs/kokoro.md, "The learned map"); bench/cloning_v2.py scores it
when it exists.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "voice" / "clone_map_en.npz"
# (cosyvoice.voice.space.MAP_FILE, where bench/cloning_v2.py reads it; not committed)
LAMBDAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def make_data(kokoro, encoder, voices: list[str], n: int, rng: np.random.Generator):
    """``(X (N, 256) embeddings, Y (N, V) weights)`` of single voices and random blends."""
    from cosyvoice.voice.blend import Blend
    from cosyvoice.voice.space import SENTENCES

    rows = [np.eye(len(voices))[i] for i in range(len(voices))]
    for _ in range(n):
        picked = rng.choice(len(voices), size=int(rng.integers(2, 4)), replace=False)
        y = np.zeros(len(voices))
        y[picked] = rng.dirichlet(np.ones(len(picked)))
        rows.append(y)
    xs = []
    for i, y in enumerate(rows):
        blend = Blend.from_weights({voices[j]: float(y[j]) for j in np.flatnonzero(y)})
        sentence = SENTENCES["en"][i % len(SENTENCES["en"])]
        out = kokoro.speaker(blend.spec, "en").synthesize(sentence)
        xs.append(encoder.embed(out.wav, out.sample_rate))
        if i % 20 == 0:
            logger.warning("%d / %d blends embedded", i, len(rows))
    return np.stack(xs), np.stack(rows)


def fit(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Ridge regression with a bias column → ``(V, 257)``."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    reg = lam * np.eye(xb.shape[1])
    reg[-1, -1] = 0.0
    return np.linalg.solve(xb.T @ xb + reg, xb.T @ y).T


def cv_error(x: np.ndarray, y: np.ndarray, lam: float, folds: int = 5) -> float:
    idx = np.arange(len(x))
    errs = []
    for f in range(folds):
        test = idx % folds == f
        w = fit(x[~test], y[~test], lam)
        pred = np.hstack([x[test], np.ones((test.sum(), 1))]) @ w.T
        errs.append(np.mean(np.abs(np.clip(pred, 0, None) - y[test]).sum(axis=1)))
    return float(np.mean(errs))


def main(argv: list[str] | None = None) -> int:
    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.speaker.encoder import SpeakerEncoder
    from cosyvoice.voice.space import current_key, voice_lang

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blends", type=int, default=160)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--data", type=Path, default=None,
                    help="keep the embedded clips here; reuse them when the file exists")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    if args.data is not None and args.data.is_file():
        data = np.load(args.data)
        x, y, voices = data["x"], data["y"], [str(v) for v in data["voices"]]
    else:
        kokoro = KokoroModel.load(threads=1)
        voices = sorted(v for v in kokoro.voices if voice_lang(v) == "en")
        x, y = make_data(kokoro, SpeakerEncoder.load(), voices, args.blends,
                         np.random.default_rng(args.seed))
        if args.data is not None:
            np.savez_compressed(args.data, x=x, y=y, voices=np.array(voices))
    errs = {lam: cv_error(x, y, lam) for lam in LAMBDAS}
    lam = min(errs, key=errs.get)
    w = fit(x, y, lam).astype(np.float32)
    np.savez_compressed(args.out, weights=w, voices=np.array(voices), lam=lam,
                        lang="en", key=current_key())
    print(f"trained on {len(x)} clips ({args.blends} blends + {len(voices)} voices) in "
          f"{time.perf_counter() - t0:.0f} s; 5-fold L1 weight error by lambda: "
          + ", ".join(f"{k:g}: {v:.3f}" for k, v in errs.items())
          + f"; chose {lam:g}; wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
