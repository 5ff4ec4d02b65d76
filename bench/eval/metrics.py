"""What the harness measures on each output: intelligibility (Whisper), speaker similarity
(two encoders), DNSMOS OVRL.

Text normalisation for WER/CER follows seed-tts-eval's ``run_wer.py``: punctuation removed
(ASCII and CJK; the apostrophe kept), lower case, Mandarin compared character by character,
each utterance's error rate averaged over the utterances. Two differences, both applied the
same way to the reference and the transcript: digit runs are spelled first with the app's
own number readers (``123`` → "one hundred twenty-three" in English, 一百二十三 in Mandarin
text), and punctuation becomes a space rather than nothing (so "twenty-three" and "twenty
three" match). Tokens are the CJK characters and the Latin words: an English sentence is
scored by words (WER), a Mandarin one by characters (CER), a mixed one by both (MER).
Transcripts come from the app's recognizer code (:mod:`cosyvoice.asr`, the language given,
beam 5); Mandarin output is converted to simplified characters there.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from bench._metrics import dnsmos, edit_distance, to_16k

logger = logging.getLogger(__name__)

_DIGITS = re.compile(r"\d+")
_TOKENS = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[a-z0-9']+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _spell_digits(text: str) -> str:
    from cosyvoice.frontend.en_numbers import cardinal as en_cardinal
    from cosyvoice.frontend.zh_normalize import cardinal as zh_cardinal

    def spell(m: re.Match[str]) -> str:  # in Mandarin when a CJK character is next to it
        before, after = m.string[:m.start()].rstrip()[-1:], m.string[m.end():].lstrip()[:1]
        if _CJK.match(before) or _CJK.match(after):
            return zh_cardinal(m.group())
        return f" {en_cardinal(int(m.group()))} "

    return _DIGITS.sub(spell, text)


def tokens(text: str) -> list[str]:
    """Scoring tokens of a text: digits spelled, punctuation dropped, lower case; each CJK
    character one token, each Latin word one token."""
    text = _spell_digits(unicodedata.normalize("NFKC", text)).lower()
    text = "".join(" " if unicodedata.category(c).startswith("P") and c != "'" else c
                   for c in text)
    return _TOKENS.findall(text)


def error_rate(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edit operations, reference tokens) between two texts' :func:`tokens`."""
    ref, hyp = tokens(reference), tokens(hypothesis)
    return edit_distance(ref, hyp), len(ref)


def cer(reference: str, hypothesis: str) -> float:
    """Error rate in percent of the reference's tokens (CER for Mandarin text)."""
    errors, n = error_rate(reference, hypothesis)
    return 100.0 * errors / max(n, 1)


@dataclass
class Similarity:
    ge2e: float
    dvector: float


class Scorer:
    """The models that score outputs, loaded on first use and kept for the whole run.

    ``asr_en`` transcribes English items, ``asr_zh`` Mandarin and mixed ones (recognizer
    names of :mod:`cosyvoice.asr.recognizers`)."""

    def __init__(self, models_dir, asr_en: str = "whisper-tiny.en",
                 asr_zh: str = "whisper-base", threads: int = 2) -> None:
        self.models_dir = models_dir
        self.asr_names = {"en": asr_en, "zh": asr_zh}
        self.threads = threads
        self._asr: dict[str, object] = {}
        self._ge2e = self._dvec = None

    def transcriber(self, lang: str):
        from cosyvoice.asr.transcriber import Transcriber

        name = self.asr_names[lang]
        if name not in self._asr:
            self._asr[name] = Transcriber.load(self.models_dir, name, threads=self.threads)
        return self._asr[name]

    def transcribe(self, wav: np.ndarray, sr: int, lang: str) -> str:
        from cosyvoice.asr.transcriber import TranscriptionError

        try:
            return self.transcriber(lang).transcribe(to_16k(wav, sr), lang).text
        except TranscriptionError as e:  # no words heard, or a decode that loops: every
            # reference token counts as missed
            logger.info("no transcript (%s): %s", lang, e)
            return ""

    def dnsmos_ovrl(self, wav: np.ndarray, sr: int) -> float:
        return dnsmos(wav, sr)["ovrl"]

    def embeddings(self, wav: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
        """Unit speaker embeddings of a clip: (GE2E, d-vector)."""
        if self._ge2e is None:
            from bench.dvector import DVectorEncoder
            from cosyvoice.speaker.encoder import SpeakerEncoder

            self._ge2e, self._dvec = SpeakerEncoder.load(), DVectorEncoder()
        return self._ge2e.embed(wav, sr), self._dvec.embed(wav, sr)

    def similarity(self, wav: np.ndarray, sr: int,
                   refs: list[tuple[np.ndarray, np.ndarray]]) -> Similarity:
        """Mean cosine similarity of a clip to reference embeddings, by each encoder."""
        g, d = self.embeddings(wav, sr)
        return Similarity(float(np.mean([g @ r[0] for r in refs])),
                          float(np.mean([d @ r[1] for r in refs])))
