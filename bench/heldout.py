"""Cloning cases with held-out clips: a prompt of each speaker, and other recordings of the
same speaker that the cloner never hears (what similarity is measured against).

Sources are those of :mod:`bench.prompts` (installed packages' data; apt packages listed
there, plus ``festvox-italp16k festvox-ca-ona-hts`` for two more synthetic voices):

- ``cate_blanch`` (real, female): prompt ``cate_blanch.mp3``, held out ``cate_blanch_2.mp3``;
- ``heath_ledger`` (real, male, 3 s): cut at the quietest point near the middle, the first
  part the prompt, the second held out;
- ``alsa_channels`` (real, female): four channel names the prompt, the other four held out;
- ``allison_ivr`` (real, female, 8 kHz): four IVR prompts the prompt, three others held out;
- festival voices (synthetic): the prompt text spoken as the prompt, a different text as
  the held-out clip (``kal``, ``ked`` male diphone; ``slt`` female HTS; ``ona`` Catalan
  female HTS and ``lp`` Italian female diphone speak their own language's texts).

Nothing is cached: building every case takes a few seconds (festival renders).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.prompts import (
    ALLISON_DIR,
    ALLISON_FILES,
    ALSA_DIR,
    ALSA_FILES,
    FESTIVAL_TEXT,
    _concat,
    _gradio_asset,
    _read_mono,
)
from cosyvoice.audio.io import read_audio, to_mono

logger = logging.getLogger(__name__)

ALLISON_HELDOUT = ("demo-congrats", "vm-options", "dir-intro")
HELDOUT_TEXT = ("The fish twisted and turned on the bent hook. A large size in stockings is "
                "hard to sell. The little tales they tell are false. Press the pants and "
                "sew a button on the vest.")
# voice → (festival voice, sex, voice folder, prompt text, held-out text)
FESTIVAL = {
    "festival_kal": ("voice_kal_diphone", "male", "english/kal_diphone", FESTIVAL_TEXT,
                     HELDOUT_TEXT),
    "festival_ked": ("voice_ked_diphone", "male", "english/ked_diphone", FESTIVAL_TEXT,
                     HELDOUT_TEXT),
    "festival_slt": ("voice_cmu_us_slt_arctic_hts", "female", "us/cmu_us_slt_arctic_hts",
                     FESTIVAL_TEXT, HELDOUT_TEXT),
    "festival_lp": ("voice_lp_diphone", "female", "italian/lp_diphone",
                    "Quando la luce del sole colpisce le gocce di pioggia, si forma un "
                    "arcobaleno. La divisione della luce bianca crea molti colori.",
                    "Il pesce si contorceva sull'amo piegato. Le piccole storie che "
                    "raccontano sono false. Stira i pantaloni e cuci un bottone."),
    "festival_ona": ("voice_upc_ca_ona_hts", "female", "catalan/upc_ca_ona_hts",
                     "Quan la llum del sol toca les gotes de pluja, es forma un arc de "
                     "Sant Martí. La llum blanca es divideix en molts colors.",
                     "El peix es regirava a l'ham doblegat. Les petites històries que "
                     "expliquen són falses. Planxa els pantalons i cus un botó."),
}
FESTIVAL_DIR = Path("/usr/share/festival/voices")


@dataclass
class Case:
    name: str
    sex: str
    kind: str  # "real" | "synthetic"
    prompt: tuple[np.ndarray, int]
    heldout: list[tuple[np.ndarray, int]] = field(default_factory=list)

    @property
    def prompt_s(self) -> float:
        return len(self.prompt[0]) / self.prompt[1]

    @property
    def heldout_s(self) -> float:
        return sum(len(w) / sr for w, sr in self.heldout)


def _split_at_pause(wav: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut at the quietest 50 ms frame of the middle third."""
    hop = int(0.05 * sr)
    n = len(wav) // hop
    energy = np.array([np.mean(wav[i * hop:(i + 1) * hop] ** 2) for i in range(n)])
    lo, hi = n // 3, 2 * n // 3
    cut = (lo + int(np.argmin(energy[lo:hi]))) * hop + hop // 2
    return wav[:cut], wav[cut:]


def _festival(voice: str, text: str) -> tuple[np.ndarray, int] | None:
    if shutil.which("text2wave") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        txt, out = Path(tmp) / "in.txt", Path(tmp) / "out.wav"
        txt.write_text(text, encoding="latin-1", errors="replace")
        proc = subprocess.run(["text2wave", "-eval", f"({voice})", str(txt), "-o", str(out)],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 or not out.is_file() or "not defined" in proc.stderr:
            return None
        data, sr = read_audio(out)
    return to_mono(data), sr


def build_cases() -> list[Case]:
    """Every case whose sources are installed (a missing one is logged and skipped)."""
    cases = []
    cate, cate2 = (_read_mono(_gradio_asset(f"{n}.mp3")) for n in ("cate_blanch", "cate_blanch_2"))
    if cate and cate2:
        cases.append(Case("cate_blanch", "female", "real", cate, [cate2]))
    heath = _read_mono(_gradio_asset("heath_ledger.mp3"))
    if heath:
        a, b = _split_at_pause(*heath)
        cases.append(Case("heath_ledger", "male", "real", (a, heath[1]), [(b, heath[1])]))
    alsa = [ALSA_DIR / f"{n}.wav" for n in ALSA_FILES]
    if all(p.is_file() for p in alsa):
        cases.append(Case("alsa_channels", "female", "real", _concat(alsa[:4]),
                          [_concat(alsa[4:])]))
    allison = [ALLISON_DIR / f"{n}.wav" for n in ALLISON_FILES + ALLISON_HELDOUT]
    if all(p.is_file() for p in allison):
        cases.append(Case("allison_ivr", "female", "real", _concat(allison[:4]),
                          [_read_mono(p) for p in allison[4:]]))
    for name, (voice, sex, folder, text, heldout_text) in FESTIVAL.items():
        if not (FESTIVAL_DIR / folder).is_dir():
            logger.warning("case %s skipped: festival voice %s not installed", name, voice)
            continue
        prompt, held = _festival(voice, text), _festival(voice, heldout_text)
        if prompt and held:
            cases.append(Case(name, sex, "synthetic", prompt, [held]))
    return cases
