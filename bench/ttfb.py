"""Time to first audio byte of a streamed ``POST /api/v1/tts`` vs. the full response time.

    nice -n 5 .venv/bin/python bench/ttfb.py [--runs 5]
    nice -n 5 .venv/bin/python bench/ttfb.py --defaults [--runs 5] [--paths onnx,auto]

Starts app.py on a free port (temporary dirs), waits for it to be ready, warms each voice
with one request, then for a ~200-character English text (voice joe) and a ~200-character
Chinese text (voice baker) times, ``--runs`` times each and alternating:

- streamed (``stream=true``, WAV): from sending the request to the first audio sample
  byte after the 44-byte streaming WAV header (``ttfb``), and to the end of the stream;
- not streamed (WAV): from sending the request to the last byte of the body (``full``).

Prints the medians and ``RESULT ttfb_en_s=… full_en_s=… ttfb_zh_s=… full_zh_s=…``.

``--defaults`` (issue #38): the default voices (``af_heart``, ``zm_yunxi``) through the real
app, whose startup loads every required model, for bench/kokoro_speed.py's short,
130- and 300-character texts, one app per ``--kokoro-path`` in ``--paths`` (started one
after the other): the streamed request's first audio byte (median of ``--runs``, after
one warm-up request per text), alone and for 4 requests sent at once (median over the 4).
"""

from __future__ import annotations

import argparse
import http.client
import json
import struct
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median  # noqa: E402
from tests.conftest import start_app, stop_app  # noqa: E402

WAV_HEADER_BYTES = 44  # cosyvoice.audio.encode.streaming_wav_header
TEXT_EN = ("The old lighthouse keeper climbed the stairs every evening. He lit the lamp and "
           "watched the ships pass by. On stormy nights the waves rose high against the "
           "rocks. Still, the light never failed them once.")
TEXT_ZH = ("清晨的阳光洒在安静的小镇上，街道两旁的店铺陆续开门。老人们在公园里打太极拳，孩子"
           "们背着书包走向学校。市场里人声鼎沸，摊主们热情地招呼着来往的顾客。一位年轻的母亲"
           "推着婴儿车，慢慢地走过石板桥。河边的柳树随风摇摆，水面上倒映着蓝天和白云。远处传"
           "来悠扬的钟声，新的一天就这样开始了。大家都期待着今天会有好消息传来，生活也会越来"
           "越美好。放学以后，孩子们在河边的草地上放风筝，笑声传得很远很远。大家都很开心。")


def post(url: str, body: dict, stream: bool) -> tuple[float, float, float]:
    """(seconds to the first audio byte, seconds to the last byte, seconds of audio)."""
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    data = json.dumps({**body, "stream": stream, "format": "wav"}).encode()
    t0 = time.perf_counter()
    conn.request("POST", "/api/v1/tts", data, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    head, got, first = b"", 0, None
    while chunk := resp.read1(65536):
        got += len(chunk)
        if len(head) < WAV_HEADER_BYTES:
            head += chunk[: WAV_HEADER_BYTES - len(head)]
        if first is None and got > WAV_HEADER_BYTES:
            first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    conn.close()
    sr = struct.unpack_from("<I", head, 24)[0]  # the fmt chunk's sample rate
    return (first if first is not None else total), total, (got - WAV_HEADER_BYTES) / 2 / sr


def measure(url: str, body: dict, runs: int) -> dict[str, list[float]]:
    post(url, body, stream=True)  # warm-up: the voice's first request
    out: dict[str, list[float]] = {"ttfb": [], "stream_end": [], "full": [], "audio_s": []}
    for _ in range(runs):
        first, end, audio_s = post(url, body, stream=True)
        _, full, _ = post(url, body, stream=False)
        out["ttfb"].append(first)
        out["stream_end"].append(end)
        out["full"].append(full)
        out["audio_s"].append(audio_s)
    return out


def first_bytes(url: str, body: dict, n: int) -> float:
    """Median seconds to the first audio byte of ``n`` streamed requests sent at once."""
    import threading

    times: list[float] = []
    threads = [threading.Thread(target=lambda: times.append(post(url, body, True)[0]))
               for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return median(times)


def defaults(runs: int, paths: list[str]) -> None:
    import os

    from bench.kokoro_speed import TEXTS, VOICES

    print(f"# first audio byte of the default voices through the app (REST, stream, WAV), "
          f"on {machine()}; load average {os.getloadavg()[0]:.2f} at the start; medians of "
          f"{runs}")
    for path in paths:
        app = start_app(Path(tempfile.mkdtemp(prefix="bench-ttfb-")), "--kokoro-path", path)
        try:
            for (lang, size), text in TEXTS.items():
                body = {"text": text, "voice": VOICES[lang]}
                post(app.url, body, stream=True)  # warm-up
                alone = [post(app.url, body, stream=True)[0] for _ in range(runs)]
                four = first_bytes(app.url, body, 4)
                print(f"{path:>5} {lang} {size:>5}: first audio {median(alone):.3f} s "
                      f"(runs {', '.join(f'{x:.3f}' for x in alone)}); 4 at once "
                      f"{four:.3f} s; load {os.getloadavg()[0]:.2f}")
                print(f"RESULT first_audio_{path}_{lang}_{size}_s={median(alone):.3f} "
                      f"first_audio_4_{path}_{lang}_{size}_s={four:.3f}")
        finally:
            stop_app(app)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed requests per kind (median)")
    ap.add_argument("--defaults", action="store_true",
                    help="the default Kokoro voices per --kokoro-path (issue #38)")
    ap.add_argument("--paths", default="onnx,auto", help="--kokoro-path values (--defaults)")
    args = ap.parse_args()
    if args.defaults:
        defaults(args.runs, args.paths.split(","))
        return 0
    app = start_app(Path(tempfile.mkdtemp(prefix="bench-ttfb-")))
    try:
        en = measure(app.url, {"text": TEXT_EN, "voice": "joe"}, args.runs)
        zh = measure(app.url, {"text": TEXT_ZH, "voice": "baker"}, args.runs)
    finally:
        stop_app(app)
    print(f"# time to first audio byte, streamed vs full /api/v1/tts, on {machine()}; "
          f"medians of {args.runs}")
    for name, text, r in (("en", TEXT_EN, en), ("zh", TEXT_ZH, zh)):
        print(f"{name}: {len(text)} characters, {median(r['audio_s']):.1f} s of audio | "
              f"ttfb {median(r['ttfb']):.2f} s (runs {', '.join(f'{x:.2f}' for x in r['ttfb'])})"
              f" | stream end {median(r['stream_end']):.2f} s | full {median(r['full']):.2f} s "
              f"(runs {', '.join(f'{x:.2f}' for x in r['full'])}) | ttfb/full "
              f"{median(r['ttfb']) / median(r['full']):.2f}")
    print(f"RESULT ttfb_en_s={median(en['ttfb']):.3f} full_en_s={median(en['full']):.3f} "
          f"ttfb_zh_s={median(zh['ttfb']):.3f} full_zh_s={median(zh['full']):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
