"""The one text pass: user text → sentences of normalized language runs.

Inline tags are parsed, each stretch of text is cleaned once, checked, split into
sentences once and each language run normalized once (:func:`plan_text`). Engines receive
the result and never clean, split or normalize again; a run longer than its backend can
speak at once is cut here into ``parts`` (at commas, then spaces).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from cosyvoice.errors import TextError
from cosyvoice.frontend.clean import clean_text
from cosyvoice.frontend.en_normalize import normalize_en
from cosyvoice.frontend.inline_tags import parse_inline
from cosyvoice.frontend.languages import LANGUAGES, check_language_script
from cosyvoice.frontend.mixed import Run, split_mixed
from cosyvoice.frontend.pronunciation import Reading, readings_in
from cosyvoice.frontend.sentences import split_sentences
from cosyvoice.frontend.text_checks import check_length, check_script, check_speakable

# A first Chinese sentence longer than this is split at its first clause break (，、；:：) so
# that a stream's first chunk is short and playback starts sooner.
FIRST_CHUNK_CHARS = 12
_CLAUSE_BREAK = re.compile(r"[，、；,;：:]+")
_SENTENCE_END = re.compile(r"[.!?。！？…][\"'”’)）]*\s*$")


@dataclass
class Sentence:
    """A sentence as typed (for the chunk) and its normalized language runs."""

    text: str
    runs: list[Run]
    emphasis: list[bool] = field(default_factory=list)  # per run; missing entries: False
    pause_after_s: float = 0.0  # an inline [pause]/[breath] after the sentence
    breath_after: bool = False

    def flags(self) -> list[bool]:
        """Per-run emphasis, one flag per run."""
        flags = list(self.emphasis[: len(self.runs)])
        return flags + [False] * (len(self.runs) - len(flags))

    @property
    def languages(self) -> set[str]:
        return {r.lang for r in self.runs}


def plan_text(text: str, max_chars: int, language: str | None = None,
              voice: str = "", lexicon: Mapping[str, Reading] | None = None) -> list[Sentence]:
    """Sentences with their normalized language runs: English text as one run per sentence;
    Chinese and mixed text split into zh/en runs (digits and units by their neighbours).
    ``language``: the language of ``voice`` when it is one of
    :data:`~cosyvoice.frontend.languages.LANGUAGES` — its alphabetic text is read in that
    language (Japanese: all of it), Chinese runs stay Mandarin.
    ``lexicon``: the user lexicon's readings (word → Reading); each run carries the readings
    of its words (inline overrides first, then the lexicon), for the engine's G2P.
    Raises :class:`TextError` for empty, over-long, unspeakable or unsupported text, and for
    an inline override whose word the normalized text no longer has."""
    segments = parse_inline(text or "")  # plain text: one segment, no pauses
    check_length(" ".join(seg.text for seg in segments), max_chars)
    cleaned = _cleaned(segments)
    joined = " ".join(cleaned)  # the text the user means: without its inline tags
    check_speakable(joined)
    if language in LANGUAGES:
        check_language_script(joined, language, voice)
        script, main = "other", "en"
    else:
        language = None
        script = _check_script(joined, voice)
        main = main_language(joined)

    def runs_of(s: str) -> list[Run]:
        if language == "ja":
            runs = [Run("ja", s)]  # misaki's Japanese G2P normalizes its own text
        elif language is not None:
            runs = split_mixed(s, normalize=True, default="en", latin=language)
        elif script == "en":
            runs = [Run("en", normalize_en(s))]
        else:
            runs = split_mixed(s, normalize=True, default=main)
        return [r for r in runs if re.search(r"\w", r.text)]

    out: list[Sentence] = []
    closed = True  # whether the last sentence ended (punctuation or a pause)
    for seg, clean in zip(segments, cleaned, strict=True):
        inline = {r.word.lower(): r for r in seg.readings}
        for j, s in enumerate(split_sentences(clean) if re.search(r"\w", seg.text) else []):
            runs = runs_of(s)
            for run in runs:
                run.readings = readings_in(run.text, run.lang, inline, lexicon or {})
            if not runs:
                continue
            flags = [seg.emphasis] * len(runs)
            if j == 0 and not closed and out:  # an emphasis inside a sentence
                last = out[-1]
                last.emphasis = last.flags() + flags
                last.runs, last.text = last.runs + runs, f"{last.text} {s}"
            else:
                out.append(Sentence(s, runs, flags))
            closed = bool(_SENTENCE_END.search(s))
        if seg.pause_after_s and out:
            out[-1].pause_after_s += seg.pause_after_s
            out[-1].breath_after |= seg.breath_after
            closed = True
    if not out:
        raise TextError("The text has no speakable words (only symbols or punctuation)")
    _check_overrides_used(segments, out)
    return _short_first(out)


def _cleaned(segments) -> list[str]:
    """Each inline segment's text through :func:`clean_text`: the one cleaning every
    surface's text gets (a synthesis, and what subtitles show, :func:`spoken_text`)."""
    return [clean_text(seg.text) for seg in segments]


def spoken_text(text: str) -> str:
    """``text`` as it is spoken and shown in subtitles — inline tags taken out, markup and
    control characters (ESC, NUL, BEL …) stripped — for the surfaces that show a whole
    text at once (a dialogue's lines, a batch job's items); a single request's subtitles
    are its planned sentences, cleaned the same way."""
    return " ".join(_cleaned(parse_inline(text or "")))


def _check_overrides_used(segments, sentences: list[Sentence]) -> None:
    """Every inline override must reach a run of its language (normalization may have
    rewritten its word, e.g. ``{3D|…}`` → "three D"): never dropped silently."""
    used = {id(r) for s in sentences for run in s.runs for r in run.readings.values()}
    for seg in segments:
        for r in seg.readings:
            if id(r) not in used:
                raise TextError(
                    f"the override {r.written()!r} cannot be applied: its word is not read as "
                    f"written {'Chinese' if r.lang == 'zh' else 'English'} here (numbers and "
                    "abbreviations are normalized first); put the override on the spoken "
                    f"words / 读音标注 {r.written()} 无法应用：请标注在实际朗读的文字上")


def _check_script(text: str, voice: str) -> str:
    """``check_script``; for a named voice, its error says which languages it reads."""
    try:
        return check_script(text)
    except TextError as e:
        if not voice:
            raise
        raise TextError(f"Voice {voice} reads English and Mandarin. {e} Text in another "
                        "language needs a voice of that language, where the engine lists "
                        f"one. / 音色 {voice} 只能朗读英语和中文，文本中有它无法朗读的文字；"
                        "请删除，或换用该语言的音色（如有）。") from e


def run_parts(run: Run, limits: Mapping[str, int]) -> list[str]:
    """``run``'s text in pieces its backend can speak at once (``limits[run.lang]``
    characters; no limit for a language not named)."""
    limit = limits.get(run.lang)
    if limit is None or len(run.text) <= limit:
        return [run.text]
    return split_sentences(run.text, max_chars=limit) or [run.text]


def main_language(text: str) -> str:
    """"zh" when the text has at least as many hanzi as Latin words, else "en"."""
    hanzi = len(re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]", text))
    words = len(re.findall(r"[A-Za-z]+", text))
    return "zh" if hanzi and hanzi >= words else "en"


def _short_first(sentences: list[Sentence]) -> list[Sentence]:
    """Split a long first sentence after its first clause break (，、；,;:：), so a stream's
    first chunk is short; the split only applies when both parts stay speakable."""
    first = sentences[0]
    if (len(first.runs) != 1 or first.runs[0].lang != "zh"
            or len(first.text) <= FIRST_CHUNK_CHARS):
        return sentences
    run = first.runs[0]
    raw_breaks = list(_CLAUSE_BREAK.finditer(first.text))
    for k, m in enumerate(_CLAUSE_BREAK.finditer(run.text)):
        head, rest = run.text[: m.end()].strip(), run.text[m.end():].strip()
        if len(re.findall(r"\w", head)) >= 2 and re.search(r"\w", rest):
            cut = raw_breaks[k].end() if k < len(raw_breaks) else len(first.text)
            return [Sentence(first.text[:cut].strip() or head, [_sub_run(run, head)],
                             first.emphasis[:1]),
                    Sentence(first.text[cut:].strip() or rest, [_sub_run(run, rest)],
                             first.emphasis[:1], first.pause_after_s, first.breath_after),
                    *sentences[1:]]
    return sentences


def _sub_run(run: Run, text: str) -> Run:
    """A piece of ``run`` with the readings of the words it keeps."""
    return Run(run.lang, text, readings_in(text, run.lang, run.readings))
