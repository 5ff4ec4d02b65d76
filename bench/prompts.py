"""The prompt set of the cloning benchmark: real and synthetic voices, male and female.

Sources (nothing is downloaded; each is an installed package's data):

- Gradio's media assets in ``.venv`` (pip ``gradio``): ``cate_blanch.mp3``,
  ``cate_blanch_2.mp3`` (real, female, film dialogue), ``heath_ledger.mp3`` (real, male).
- Debian ``alsa-utils``: ``/usr/share/sounds/alsa/*.wav``, a real female voice naming
  the speaker channels (48 kHz), concatenated.
- Debian ``asterisk-core-sounds-en-wav``: Allison Smith's IVR prompts (real, female,
  8 kHz telephone band), a few concatenated.
- Debian ``festival`` + ``festvox-kallpc16k``, ``festvox-kdlpc16k`` (diphone voices cut
  from real male speakers' recordings) and ``festvox-us-slt-hts`` (HTS statistical
  voice trained on CMU ARCTIC "slt", female): rendered with ``text2wave``, labelled
  synthetic.

apt packages this file needs (the bench skips a prompt whose package is missing and
says which):

    apt-get install --no-install-recommends alsa-utils asterisk-core-sounds-en-wav \
        festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts

(MBROLA voices are not in Debian bookworm ``main``, so they are not used.)

Prompts are cached as 16-bit WAV under ``bench/out/prompts/`` (git-ignored) with a
``manifest.json`` describing each one. Run ``python -m bench.prompts`` to build and list.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosyvoice.audio.io import read_audio, resample, to_mono, write_wav_atomic

logger = logging.getLogger(__name__)

OUT_DIR = Path(__file__).resolve().parent / "out" / "prompts"
GAP_S = 0.3  # silence between concatenated clips

ALSA_DIR = Path("/usr/share/sounds/alsa")
ALSA_FILES = ("Front_Left", "Front_Center", "Front_Right", "Side_Left", "Side_Right",
              "Rear_Left", "Rear_Center", "Rear_Right")
ALLISON_DIR = Path("/usr/share/asterisk/sounds/en_US_f_Allison")
ALLISON_FILES = ("vm-mailboxfull", "auth-incorrect", "vm-forward", "privacy-prompt")

# Different from the benchmark's synthesis sentences on purpose.
FESTIVAL_TEXT = (
    "When the sunlight strikes raindrops in the air, they act as a prism and form a "
    "rainbow. The rainbow is a division of white light into many beautiful colors."
)
FESTIVAL_VOICES = {
    "festival_kal": ("voice_kal_diphone", "male", "festvox-kallpc16k"),
    "festival_ked": ("voice_ked_diphone", "male", "festvox-kdlpc16k"),
    "festival_slt": ("voice_cmu_us_slt_arctic_hts", "female", "festvox-us-slt-hts"),
}


@dataclass
class Prompt:
    """One cached prompt recording and what it is."""

    name: str
    path: str
    sex: str  # "female" | "male"
    kind: str  # "real" | "synthetic"
    source: str
    duration_s: float
    sample_rate: int

    def load(self) -> tuple[np.ndarray, int]:
        """``(wav (T,) float32, sr)``."""
        wav, sr = read_audio(self.path)
        return to_mono(wav), sr


def _gradio_asset(name: str) -> Path | None:
    spec = importlib.util.find_spec("gradio")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / "media_assets" / "audio" / name
    return path if path.is_file() else None


def _read_mono(path: Path | None) -> tuple[np.ndarray, int] | None:
    if path is None:
        return None
    data, sr = read_audio(path)
    return to_mono(data), sr


def _concat(paths: list[Path]) -> tuple[np.ndarray, int]:
    """Concatenate clips at the highest of their rates with short silences between."""
    clips = [read_audio(p) for p in paths]
    sr = max(s for _, s in clips)
    gap = np.zeros(int(GAP_S * sr), dtype=np.float32)
    parts: list[np.ndarray] = []
    for data, s in clips:
        parts += [resample(to_mono(data), s, sr), gap]
    return np.concatenate(parts[:-1]), sr


def _festival(voice: str) -> tuple[np.ndarray, int] | None:
    if shutil.which("text2wave") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        txt, wav = Path(tmp) / "in.txt", Path(tmp) / "out.wav"
        txt.write_text(FESTIVAL_TEXT)
        proc = subprocess.run(["text2wave", "-eval", f"({voice})", str(txt), "-o", str(wav)],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 or not wav.is_file() or "not defined" in proc.stderr:
            return None
        data, sr = read_audio(wav)
    return to_mono(data), sr


FESTIVAL_VOICE_DIRS = {
    "festival_kal": Path("/usr/share/festival/voices/english/kal_diphone"),
    "festival_ked": Path("/usr/share/festival/voices/english/ked_diphone"),
    "festival_slt": Path("/usr/share/festival/voices/us/cmu_us_slt_arctic_hts"),
}


def installed_sources() -> list[str]:
    """Names of the prompts whose source is installed, found without rendering any: the
    cache is rebuilt when this list changes (e.g. ``bench/run.sh`` installed the Debian
    voices after a first run had cached only the gradio assets)."""
    names = [n for n in ("cate_blanch", "cate_blanch_2", "heath_ledger")
             if _gradio_asset(f"{n}.mp3") is not None]
    if all((ALSA_DIR / f"{n}.wav").is_file() for n in ALSA_FILES):
        names.append("alsa_channels")
    if all((ALLISON_DIR / f"{n}.wav").is_file() for n in ALLISON_FILES):
        names.append("allison_ivr")
    if shutil.which("text2wave") is not None:
        names += [n for n, d in FESTIVAL_VOICE_DIRS.items() if d.is_dir()]
    return names


def _sources() -> list[tuple[str, str, str, str, object]]:
    """``(name, sex, kind, source, loader)``; loader returns ``(wav, sr)`` or None."""
    def gradio(name: str):
        return lambda: _read_mono(_gradio_asset(name))

    def files(folder: Path, names: tuple[str, ...]):
        paths = [folder / f"{n}.wav" for n in names]
        return lambda: _concat(paths) if all(p.is_file() for p in paths) else None

    out = [
        ("cate_blanch", "female", "real", "gradio media asset cate_blanch.mp3",
         gradio("cate_blanch.mp3")),
        ("cate_blanch_2", "female", "real", "gradio media asset cate_blanch_2.mp3",
         gradio("cate_blanch_2.mp3")),
        ("heath_ledger", "male", "real", "gradio media asset heath_ledger.mp3",
         gradio("heath_ledger.mp3")),
        ("alsa_channels", "female", "real", "Debian alsa-utils /usr/share/sounds/alsa",
         files(ALSA_DIR, ALSA_FILES)),
        ("allison_ivr", "female", "real",
         "Debian asterisk-core-sounds-en-wav (Allison Smith, 8 kHz telephone band)",
         files(ALLISON_DIR, ALLISON_FILES)),
    ]
    for name, (voice, sex, package) in FESTIVAL_VOICES.items():
        out.append((name, sex, "synthetic", f"Debian festival + {package} ({voice})",
                    lambda v=voice: _festival(v)))
    return out


def build_prompts(out_dir: Path = OUT_DIR, rebuild: bool = False) -> list[Prompt]:
    """Assemble (or read from the cache) every prompt whose source is installed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / "manifest.json"
    if manifest.is_file() and not rebuild:
        cached = json.loads(manifest.read_text())
        if isinstance(cached, dict) and cached.get("installed") == installed_sources():
            prompts = [Prompt(**d) for d in cached["prompts"]]
            if all(Path(p.path).is_file() for p in prompts):
                return prompts
    prompts = []
    for name, sex, kind, source, loader in _sources():
        got = loader()
        if got is None:
            logger.warning("prompt %s skipped: source not installed (%s)", name, source)
            continue
        wav, sr = got
        path = write_wav_atomic(out_dir / f"{name}.wav", wav, sr)
        prompts.append(Prompt(name, str(path), sex, kind, source, round(len(wav) / sr, 2), sr))
    manifest.write_text(json.dumps({"installed": installed_sources(),
                                    "prompts": [dataclasses.asdict(p) for p in prompts]},
                                   indent=1))
    return prompts


def main() -> None:
    logging.basicConfig(level=logging.INFO)
    for p in build_prompts(rebuild="--rebuild" in sys.argv):
        print(f"{p.name:15s} {p.sex:6s} {p.kind:9s} {p.duration_s:5.1f} s {p.sample_rate:6d} Hz"
              f"  {p.source}")


if __name__ == "__main__":
    main()
