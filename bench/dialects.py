"""Dialect tone check: does each re-toned syllable have its dialect tone value's shape?

    nice -n 5 .venv/bin/python bench/dialects.py            # full run (≈ 15 min on 2 cores)
    nice -n 5 .venv/bin/python bench/dialects.py --bases 3 --dialects sichuan,jinan  # quick

For every supported dialect (cosyvoice/prosody/dialects.py) and Mandarin tone category 1–4,
``--bases`` syllable bases (default 10, so ≥ 10 syllables per category;
``--controls-bases``, default 3, of them also on the controls path) are spoken as the
target X of the neutral carrier "请读 X 这个字" (qing3 du2 X zhe4 ge4 zi4, as in
bench/zh_tones.py; the carrier stays Mandarin, only X is re-toned), through the full path
(FastSpeech2 → mel bridge → HiFi-GAN, 22.05 kHz). Two renderings are measured:

* **controls**: :func:`~cosyvoice.prosody.dialects.dialect_controls` only (tone-phone
  substitution + per-phone pitch), what ``MandarinAcoustic.synthesize(controls=...)`` does;
* **render**: the tone-phone substitution (no per-phone pitch) plus exact Chao contours
  by PSOLA, what :func:`~cosyvoice.prosody.dialects.rendering_controls` does (the shipped path).

Measurement (fixed before the first run): F0 by Praat (autocorrelation, 5 ms, 75–600 Hz)
over X's span from the model's durations (its final plus the break after it: the model's
audio lags its durations by about one phone, bench/zh_tones.py v2), voiced frames only,
3-point median, converted to Chao letters on the calibrated scale (letter 1 = 5th, 5 = 95th
F0 percentile of the Baker voice over the calibration passage, log-spaced). S / E = mean of
the first / last 20 %, M = minimum at index i, L = mean. Shape: *dipping* when i lies in the
middle 70 % and M ≤ S − 0.5 and M ≤ E − 0.5; else *rising* when E − S ≥ 0.5; else *falling*
when S − E ≥ 0.5 (*high falling* when S ≥ 3.5, else *low falling*); else *level* (*high*
L ≥ 3.5, *low* L < 2.5, else *mid*). A syllable matches when its measured shape equals
:func:`~cosyvoice.prosody.dialects.chao_shape` of the dialect's value. A dialect passes when
every category matches in ≥ 80 % of its syllables (render path).

Also per dialect, on one sentence, relative to neutral Mandarin: F0 median (Hz), F0 range
(5th–95th percentile, semitones) and rate (syllables per second of the model's non-silent
frames). Last line: ``RESULT dialects_pass=<n>/<total>``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import verdict  # noqa: E402
from bench.zh_tones import carrier, f0_track  # noqa: E402  (the same carrier and F0)

BASES = "ma ba da ta na la ga ka ha yi mao tang".split()
SENTENCE = "今天天气很好，我们一起去公园散步吧。"
TARGET = 2  # index of X among the carrier's syllables


def measured_shape(letters: np.ndarray) -> str:
    from scipy.signal import medfilt

    x = medfilt(letters, 3) if len(letters) >= 3 else letters
    n, k = len(x), max(1, len(x) // 5)
    s, e, i, m, mean = x[:k].mean(), x[-k:].mean(), int(np.argmin(x)), x.min(), x.mean()
    if 0.15 * n <= i <= 0.85 * n and m <= s - 0.5 and m <= e - 0.5:
        return "dipping"
    if e - s >= 0.5:
        return "rising"
    if s - e >= 0.5:
        return "high falling" if s >= 3.5 else "low falling"
    return "high level" if mean >= 3.5 else ("low level" if mean < 2.5 else "mid level")


def target_shape(wav, sr, render, scale) -> str:
    from cosyvoice.prosody.dialects import syllable_spans

    t0, t1 = syllable_spans(render)[TARGET]
    times, f0 = f0_track(wav, sr)
    voiced = (times >= t0) & (times <= t1) & (f0 > 0)
    if voiced.sum() < 3:
        return "unvoiced"
    return measured_shape(scale.letter(f0[voiced]))


class Renders:
    """Carrier renders and their measured target shapes, cached so dialects share them."""

    def __init__(self, zh, vocoder, scale):
        self.zh, self.voc, self.scale = zh, vocoder, scale
        self.sr = int(vocoder.sample_rate)
        self._plain, self._shapes = {}, {}

    def _render(self, base: str, spoken: int, tone: int, f0=None):
        from cosyvoice.acoustic.mandarin import ProsodyControls

        zh_ph = carrier(f"{base}{spoken}", self.zh.model.config.symbols)
        zh_ph.syllables[TARGET].tone = tone
        controls = ProsodyControls(f0=f0) if f0 is not None else None
        r = self.zh.render_phones(zh_ph, controls=controls, mel_config=self.voc.mel_config)
        return r, np.asarray(self.voc.vocode(r.mel), np.float32).reshape(-1)

    def plain(self, base: str, spoken: int):
        """The carrier with base+spoken as Mandarin (no pitch control): neutral, and the
        input of the render path (rendering_controls change only the tone phone)."""
        if (base, spoken) not in self._plain:
            self._plain[base, spoken] = self._render(base, spoken, spoken)
        return self._plain[base, spoken]

    def get(self, base: str, tone: int, dialect=None, controls: bool = True
            ) -> tuple[str | None, str]:
        """Measured shapes (controls path or None, render path) of ``tone`` of ``base``."""
        from cosyvoice.prosody.dialects import _phone_pitch, impose_contours, tone_map

        if dialect is None:
            r, wav = self.plain(base, tone)
            shape = target_shape(wav, self.sr, r, self.scale)
            return shape, shape
        value, spoken = dialect.tones[tone], tone_map(dialect)[tone]
        key = (base, spoken, value, controls)
        if key not in self._shapes:
            first = None
            if controls:
                r, wav = self._render(base, spoken, tone,
                                      _phone_pitch(dialect, self.scale, {TARGET}))
                first = target_shape(wav, self.sr, r, self.scale)
            r, wav = self.plain(base, spoken)
            r.syllables[TARGET].tone = tone  # the category the contour is chosen by
            wav = impose_contours(wav, self.sr, r, dialect, self.scale, only={TARGET})
            r.syllables[TARGET].tone = spoken
            self._shapes[key] = (first, target_shape(wav, self.sr, r, self.scale))
        return self._shapes[key]


def speak(zh, vocoder, text: str, controls=None) -> tuple[np.ndarray, int]:
    """Normalized Chinese, sentence by sentence, through the backend and the vocoder."""
    from cosyvoice.acoustic.base import to_audio
    from cosyvoice.frontend.sentences import split_sentences

    wavs = [to_audio(zh.synthesize(s, controls=controls), vocoder.vocode)
            for s in split_sentences(text, max_chars=80)]
    return np.concatenate(wavs), zh.sample_rate


def calibrate(zh, vocoder):
    from cosyvoice.engine.offline.engine import CALIBRATION_PARTS
    from cosyvoice.prosody.dialects import ChaoScale

    wav, sr = speak(zh, vocoder, "".join(CALIBRATION_PARTS["acoustic_zh"]))
    _, f0 = f0_track(wav, sr)
    lo, mid, hi = np.percentile(f0[f0 > 0], [5, 50, 95])
    print(f"calibration: Baker F0 over the calibration passage p5 {lo:.1f} Hz, median "
          f"{mid:.1f} Hz, p95 {hi:.1f} Hz ({12 * np.log2(hi / lo):.1f} st)")
    return ChaoScale(float(lo), float(hi))


def sentence_stats(zh, vocoder, key: str | None) -> tuple[float, float, float]:
    """(F0 median Hz, F0 p5–p95 range in semitones, syllables/s) of SENTENCE."""
    from cosyvoice.prosody.dialects import controls_for, get_dialect, rendering_controls

    if key is None:
        (wav, sr), controls = speak(zh, vocoder, SENTENCE), None
    else:
        (wav, sr), controls = speak(zh, vocoder, SENTENCE, rendering_controls(key)), \
            controls_for(get_dialect(key))
    _, f0 = f0_track(wav, sr)
    lo, med, hi = np.percentile(f0[f0 > 0], [5, 50, 95])
    r = zh.render(SENTENCE, controls=controls, mel_config=vocoder.mel_config)
    speech = sum(int(d) for p, d in zip(r.phones, r.durations, strict=True)
                 if p not in ("sil", "eos", "#3"))
    rate = len(r.syllables) / (speech * r.frame_seconds)
    return float(med), float(12 * np.log2(hi / lo)), rate


def tone_table(renders, bases, dialect, n_controls: int) -> np.ndarray:
    """(2 paths, 4 categories) share of syllables matching the dialect's value; the
    controls path on the first ``n_controls`` bases only (it needs renders of its own)."""
    from cosyvoice.prosody.dialects import chao_shape

    share = np.zeros((2, 4))
    for cat in (1, 2, 3, 4):
        want = chao_shape(dialect.tones[cat])
        got = [renders.get(b, cat, dialect, i < n_controls) for i, b in enumerate(bases)]
        share[0, cat - 1] = np.mean([g[0] == want for g in got[:n_controls]])
        share[1, cat - 1] = np.mean([g[1] == want for g in got])
    return share


_LACKING = {  # Cantonese segments the Baker (Mandarin) phone set has no phone for
    "-p/-t/-k coda": lambda x: x[-1] in "ptk",
    "-m coda": lambda x: x.endswith("m") and len(x) > 2,
    "oe/eo vowel": lambda x: "oe" in x or "eo" in x,
    "ng- initial": lambda x: x.startswith(("ŋ", "ng")),
}


def cantonese_coverage() -> None:
    """How much of a Cantonese reading the Mandarin phone set cannot spell (the reason
    Cantonese is refused): the calibration passage through piper-tts's bundled espeak-ng
    'yue' phonemizer, split into syllables (tone digit, ɜ for tone 3, then any coda)."""
    import re

    from piper.phonemize_espeak import EspeakPhonemizer

    from cosyvoice.engine.offline.engine import CALIBRATION_PARTS

    syllables = []
    for clause in EspeakPhonemizer().phonemize("yue", "".join(CALIBRATION_PARTS["acoustic_zh"])):
        for word in "".join(clause).replace("ˈ", "").replace("ɡ", "g").split():
            syllables += re.findall(r"[^0-9ɜ]+?[0-9ɜ](?:ng|ŋ|n|m|p|t|k)?", word)
    print(f"Cantonese reading of the calibration passage: {len(syllables)} syllables")
    for name, test in _LACKING.items():
        print(f"  {name:<14} {sum(map(test, syllables)):3d}")
    bad = sum(any(t(x) for t in _LACKING.values()) for x in syllables)
    tones = sorted({re.search(r"[0-9ɜ]", x).group() for x in syllables})
    print(f"syllables with a segment the Mandarin phone set lacks: {bad}/{len(syllables)} = "
          f"{bad / len(syllables):.0%}; tones seen: {' '.join(tones)}")


def main() -> int:
    from cosyvoice.acoustic.mandarin import MandarinAcoustic
    from cosyvoice.prosody.dialects import (
        BAKER_SCALE,
        DIALECTS,
        MANDARIN_TONES,
        chao_shape,
        supported_keys,
    )
    from cosyvoice.vocoder.loader import HifiGanVocoder

    ap = argparse.ArgumentParser()
    ap.add_argument("--bases", type=int, default=10)
    ap.add_argument("--controls-bases", type=int, default=3,
                    help="bases measured on the controls-only path (informative)")
    ap.add_argument("--dialects", default=",".join(supported_keys()))
    ap.add_argument("--no-calibration", action="store_true")
    ap.add_argument("--cantonese", action="store_true",
                    help="only the Cantonese phone-coverage count, then exit")
    args = ap.parse_args()
    if args.cantonese:
        cantonese_coverage()
        return 0
    t_start = time.perf_counter()
    vocoder = HifiGanVocoder.load()
    zh = MandarinAcoustic.load(mel_config=vocoder.mel_config)
    scale = BAKER_SCALE if args.no_calibration else calibrate(zh, vocoder)
    print(f"Chao scale: letter 1 = {scale.low_hz:.1f} Hz, 5 = {scale.high_hz:.1f} Hz "
          f"(shipped BAKER_SCALE {BAKER_SCALE.low_hz} / {BAKER_SCALE.high_hz})")
    bases, keys = BASES[:args.bases], args.dialects.split(",")
    renders = Renders(zh, vocoder, scale)

    # neutral Mandarin: the model's own tones under the same classifier (no dialect)
    # before zhe4 a third tone is the half third 21 (the model's own sandhi-free context)
    own = {**MANDARIN_TONES, 3: "21"}
    plain = [[renders.get(b, c)[1] == chao_shape(own[c]) for b in bases] for c in (1, 2, 3, 4)]
    nc = min(args.controls_bases, len(bases))
    print(f"\n{len(bases)} syllables per category in '请读 X 这个字'; share matching the "
          f"tone value's shape: controls only (first {nc} bases) / shipped rendering_controls "
          f"(all {len(bases)})")
    print(f"{'dialect':<12}{'阴平':>16}{'阳平':>16}{'上声':>16}{'去声':>16}   pass")
    print(f"{'mandarin':<12}" + "".join(
        f"{own[c]:>5} {'':>4}{np.mean(plain[c - 1]):5.0%}" for c in (1, 2, 3, 4))
        + "   (model's own)")
    passed = 0
    for key in keys:
        d = DIALECTS[key]
        share = tone_table(renders, bases, d, min(args.controls_bases, len(bases)))
        ok = bool((share[1] >= 0.8).all())
        passed += ok
        print(f"{key:<12}" + "".join(
            f"{d.tones[c]:>5} {share[0, c - 1]:4.0%}/{share[1, c - 1]:4.0%}"
            for c in (1, 2, 3, 4)) + f"   {verdict(ok)}")

    print("\nsentence '" + SENTENCE + "' vs neutral Mandarin (rendering_controls)")
    base = sentence_stats(zh, vocoder, None)
    print(f"{'dialect':<12}{'F0 median':>12}{'ratio':>8}{'range st':>10}{'Δ st':>7}"
          f"{'syl/s':>8}{'ratio':>7}")
    print(f"{'mandarin':<12}{base[0]:10.1f}Hz{1:8.2f}{base[1]:10.1f}{0:7.1f}{base[2]:8.2f}"
          f"{1:7.2f}")
    for key in keys:
        m = sentence_stats(zh, vocoder, key)
        print(f"{key:<12}{m[0]:10.1f}Hz{m[0] / base[0]:8.2f}{m[1]:10.1f}{m[1] - base[1]:7.1f}"
              f"{m[2]:8.2f}{m[2] / base[2]:7.2f}")
    n = len(renders._plain) + len(renders._shapes)
    print(f"\n{n} carrier renders, {time.perf_counter() - t_start:.0f} s")
    print(f"RESULT dialects_pass={passed}/{len(keys)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
