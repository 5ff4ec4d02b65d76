"""Measure Kokoro's voice space where the shipped one does not fit the installed weights:
``models/kokoro/voice_space.json``.

    python -m cosyvoice.tools.embed_kokoro_voices [--dir models/kokoro] [--force | --check]

``--check`` only tells whether a space matches the installed weights (shipped with the code,
``cosyvoice/voice/voice_space.json``, or measured here before): exit 0 yes, 3 no. ``run.sh``
checks at setup and, on a 3, runs this module in the background (``nice``, log
``logs/voice_space.log``) so the app is ready at once; clone mode picks the new file up when
it is written. Measuring all 36 voices takes 7–11 minutes on 2 cores.

Every installed English and Mandarin voice speaks the fixed sentences of its language
(:data:`cosyvoice.voice.space.SENTENCES`); the GE2E encoder embeds each sentence (mean of
the unit embeddings, renormalized) and the voice's profile is measured on them all (see
:mod:`cosyvoice.voice.space`). Idempotent: a file whose key matches the installed weights
is left alone (exit 0, "present"). Clone mode reads the file; it never measures per request.
Without Kokoro's files nothing is written and the exit status stays 0.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

from cosyvoice.errors import CosyVoiceError
from cosyvoice.voice.space import (
    FILE_NAME,
    SENTENCES,
    VoicePoint,
    VoiceSpace,
    current_key,
    find_space,
    voice_lang,
)

logger = logging.getLogger(__name__)
GAP_S = 0.3  # silence between sentences in the audio a profile is measured on


def measure_voice(kokoro, encoder, mel, name: str) -> VoicePoint:
    """One voice speaks its language's sentences → its embedding and profile."""
    from cosyvoice.voice.profile import VoiceProfile

    lang = voice_lang(name)
    speaker = kokoro.speaker(name)
    sr = speaker.sample_rate
    wavs = [speaker.synthesize(s).wav for s in SENTENCES[lang]]
    embs = np.stack([encoder.embed(w, sr) for w in wavs])
    mean = embs.mean(axis=0)
    gap = np.zeros(int(GAP_S * sr), np.float32)
    joined = np.concatenate([x for w in wavs for x in (w, gap)])
    profile = VoiceProfile.from_audio(joined, sr, mel)
    return VoicePoint(name, lang, (mean / np.linalg.norm(mean)).astype(np.float32), profile)


def measure(kokoro, encoder, mel, key: str, voices: list[str] | None = None) -> VoiceSpace:
    """The voice space of ``voices`` (default: every English and Mandarin voice)."""
    t0 = time.perf_counter()
    names = [n for n in (voices or sorted(kokoro.voices)) if voice_lang(n) is not None]
    points = {}
    for name in names:
        points[name] = measure_voice(kokoro, encoder, mel, name)
        logger.info("measured %s", name)
    return VoiceSpace(key, points, time.perf_counter() - t0)


def ensure(folder: Path, force: bool = False, voices: list[str] | None = None) -> str:
    """Measure and write the space unless a file with the current key is there."""
    from cosyvoice.acoustic.kokoro import KokoroModel, installed_voices
    from cosyvoice.audio.mel import MelAnalyzer
    from cosyvoice.engine.offline.models import vocoder_mel_config
    from cosyvoice.speaker.encoder import SpeakerEncoder

    if not installed_voices(folder):
        return "Kokoro is not installed; no voice space measured (clone mode uses joe/baker)"
    path = folder / FILE_NAME
    key = current_key()
    if not force and VoiceSpace.read(path, key) is not None:
        return f"voice space present ({path.name}, key {key})"
    kokoro = KokoroModel.load(folder, threads=1)
    space = measure(kokoro, SpeakerEncoder.load(), MelAnalyzer(vocoder_mel_config()), key,
                    voices)
    space.write(path)
    return (f"voice space measured: {len(space.points)} voices in {space.seconds:.0f} s "
            f"({path.name}, key {key})")


def main(argv: list[str] | None = None) -> int:
    from cosyvoice.acoustic.kokoro import default_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=default_dir(), help="models/kokoro")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--force", action="store_true", help="measure even if present")
    how.add_argument("--check", action="store_true", help="exit 0 if a space matches the "
                     "installed weights (shipped or measured), 3 if it must be measured")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        if not args.force and find_space(args.dir, key := current_key()) is not None:
            print(f"kokoro voice space: present (key {key})")
            return 0
        if args.check:
            print(f"kokoro voice space: none matches the installed weights (key {key})")
            return 3
        print("kokoro voice space: " + ensure(args.dir, args.force))
    except (CosyVoiceError, OSError) as e:
        print(f"kokoro voice space: error: {e} (clone mode keeps using joe/baker)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
