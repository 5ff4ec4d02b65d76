"""Dialogue scripts: several voices in one script, rendered into one file.

Syntax (one line of the script = one line of the dialogue)::

    [Alice|happy] Hello! Lovely day.       voice Alice, instruction "happy"
    [老王] 你好。[pause:300ms] 吃了吗？      voice 老王 (inline [pause]/[breath] still work)
    And this line is Wang's again.         no tag: the previous line's speaker and instruction
    # a comment                            skipped, as are blank lines

A speaker tag opens a line: ``[VOICE]`` or ``[VOICE|INSTRUCTION]``, where VOICE is a voice
of the chosen engine (bundled, saved, or a blend such as ``af_bella:2+af_sky:1``) and
INSTRUCTION is natural language (``happy``, ``用四川话说``; the line is then spoken in instruct
mode). ``[pause]``, ``[pause:…]`` and ``[breath]`` are inline tags even at the start of a
line — a line that starts with one continues the previous speaker. A line that starts
with ``[`` but has no ``]``, an empty voice, or a first line without a speaker (and no default
voice) is an error naming the line.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cosyvoice.audio.io import resample, write_wav_atomic
from cosyvoice.errors import TextError
from cosyvoice.frontend.plan import spoken_text
from cosyvoice.longform.items import (
    Item,
    check_gap,
    check_items,
    check_source_text,
    cues_for,
    gap_samples,
    gaps_between,
    join_with_gaps,
)
from cosyvoice.pipeline import Synthesizer
from cosyvoice.settings import Settings
from cosyvoice.subtitles import Cue

logger = logging.getLogger(__name__)

DEFAULT_GAP_S = 0.25  # between two lines of one speaker
DEFAULT_SPEAKER_GAP_S = 0.6  # where the speaker changes
_SPEAKER = re.compile(r"^\[(?P<tag>[^\[\]]*)\](?P<text>.*)$", re.DOTALL)
_INLINE = re.compile(r"^\[\s*(pause|breath)\s*(:[^\]]*)?\]", re.IGNORECASE)

Progress = Callable[[int, int, str], None]  # (lines done, total, what)


@dataclass
class DialogueLine(Item):
    """A parsed line: :class:`Item` plus its 1-based line number in the script."""

    number: int = 0


def parse_script(script: str, max_lines: int, max_chars: int,
                 default_voice: str | None = None) -> list[DialogueLine]:
    """The script's lines in order. TextError (422) naming the line for a bad tag, a first
    line without a speaker, or a script over ``max_lines`` / ``max_chars``."""
    if len(script) > max_chars:
        raise TextError(f"the script is {len(script)} characters; the limit is {max_chars} "
                        f"/ 脚本共 {len(script)} 字，上限 {max_chars} 字")
    check_source_text(script)
    lines: list[DialogueLine] = []
    voice, instruction = default_voice, ""
    for number, raw in enumerate(script.splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("[") and not _INLINE.match(text):
            voice, instruction, text = _speaker_tag(text, number)
        if voice is None:
            raise TextError(f"line {number}: no speaker yet; start the script with a tag "
                            f"such as [af_heart] or [af_heart|happy] / 第 {number} 行没有说话人，"
                            "请以 [音色] 或 [音色|指令] 开头")
        if not text:
            raise TextError(f"line {number}: the tag [{voice}] has no text after it / "
                            f"第 {number} 行标签后没有文本")
        lines.append(DialogueLine(text, voice, instruction, where=f"line {number}",
                                  group=voice, number=number))
        if len(lines) > max_lines:
            raise TextError(f"line {number}: the script has more than {max_lines} lines; "
                            f"split it / 脚本超过 {max_lines} 行，请拆分")
    if not lines:
        raise TextError("the script has no lines to speak; write e.g. [af_heart] Hello! / "
                        "脚本为空，例如：[zf_xiaoxiao] 你好！")
    return lines


def _speaker_tag(text: str, number: int) -> tuple[str, str, str]:
    m = _SPEAKER.match(text)
    if m is None:
        raise TextError(f"line {number}: the speaker tag is not closed; write [voice] or "
                        f"[voice|instruction] before the text / 第 {number} 行说话人标签缺少 ]")
    voice, _, instruction = m.group("tag").partition("|")
    voice, instruction = voice.strip(), instruction.strip()
    if not voice:
        raise TextError(f"line {number}: the speaker tag [{m.group('tag')}] names no voice / "
                        f"第 {number} 行标签缺少音色名")
    return voice, instruction, m.group("text").strip()


@dataclass
class DialogueResult:
    wav: np.ndarray
    sample_rate: int
    path: Path
    rows: list[dict] = field(default_factory=list)  # line, voice, instruction, seconds, notes
    cues: list[Cue] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def duration_s(self) -> float:
        return len(self.wav) / self.sample_rate


def render_dialogue(synth: Synthesizer, lines: list[DialogueLine], *,
                    engine: str | None = None, gap_s: float = DEFAULT_GAP_S,
                    speaker_gap_s: float = DEFAULT_SPEAKER_GAP_S, speed: float = 1.0,
                    seed: int | None = None, progress: Progress | None = None
                    ) -> DialogueResult:
    """Check every line (voices, instructions, texts: a 422 naming the line), then speak
    each through :meth:`Synthesizer.synthesize` and join them with ``gap_s`` between lines
    of one speaker and ``speaker_gap_s`` where the speaker changes. One cue per line."""
    gap_s, speaker_gap_s = check_gap("gap_s", gap_s), check_gap("speaker_gap_s", speaker_gap_s)
    check_items(synth, lines, engine, speed, seed)
    t0 = time.perf_counter()
    pieces, rows, sr = [], [], None
    for i, line in enumerate(lines):
        if progress is not None:
            progress(i, len(lines), f"line {i + 1}/{len(lines)} ({line.voice})")
        result = synth.synthesize(line.request(engine, speed, seed))
        result.path.unlink(missing_ok=True)  # the joined file is the output
        wav = result.wav
        sr = sr or result.sample_rate
        if result.sample_rate != sr:  # only if an engine fell back mid-script
            wav = resample(wav, result.sample_rate, sr)
        pieces.append(wav)
        rows.append({"line": line.number, "voice": line.voice,
                     "instruction": line.instruction, "text": spoken_text(line.text),
                     "seconds": round(len(wav) / sr, 3), "notes": " | ".join(result.notes)})
    gaps = gap_samples(gaps_between(lines, gap_s, speaker_gap_s), sr)
    wav = join_with_gaps(pieces, gaps)
    cues = cues_for([ln.text for ln in lines], [len(p) for p in pieces], gaps, sr,
                    labels=[ln.voice for ln in lines])
    path = write_wav_atomic(dialogue_path(synth.settings, lines), wav, sr)
    if progress is not None:
        progress(len(lines), len(lines), "joined")
    elapsed = time.perf_counter() - t0
    logger.info("dialogue: %d lines, %.2f s audio in %.2f s", len(lines), len(wav) / sr,
                elapsed)
    return DialogueResult(wav, sr, path, rows, cues, elapsed)


def dialogue_path(settings: Settings, lines: list[DialogueLine]) -> Path:
    """``outputs/20261206-101500_dialogue_3-voices_ab12cd.wav``"""
    import uuid
    from datetime import datetime

    voices = len({ln.voice for ln in lines})
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(settings.outputs_dir) / (f"{stamp}_dialogue_{voices}-voices_"
                                         f"{uuid.uuid4().hex[:6]}.wav")
