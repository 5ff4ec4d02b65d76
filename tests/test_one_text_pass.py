"""The one text pass: a request's text is cleaned once, split once and each language run
normalized once, in the frontend; the engine's backends never do it again (counted on the
real synthesizer with the real models, through every import site of each function)."""

from __future__ import annotations

import sys

import pytest

from cosyvoice.frontend.clean import clean_text
from cosyvoice.frontend.en_normalize import normalize_en
from cosyvoice.frontend.sentences import split_sentences
from cosyvoice.frontend.zh_normalize import normalize_zh
from cosyvoice.pipeline import SynthesisRequest
from tests.conftest import local_services


def spy(monkeypatch, fn) -> list[str]:
    """Count calls of ``fn`` wherever a cosyvoice module imported it."""
    calls: list[str] = []

    def counted(*args, **kwargs):
        calls.append(args[0])
        return fn(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("cosyvoice") and getattr(module, fn.__name__, None) is fn:
            monkeypatch.setattr(module, fn.__name__, counted)
    return calls


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    services = local_services(tmp_path_factory.mktemp("one-pass"))
    services.engine.warm()  # its calibration passages are not a request's text
    return services.synth


@pytest.mark.slow
@pytest.mark.parametrize("text, voice, runs, sentences", [
    ("The cat sat on the mat. It was 3 o'clock. Then it left.", "joe", {"en": 3}, 3),
    # two sentences, each one run; the first then split at its comma (a short first chunk)
    ("今天天气很好，我们一起去公园散步吧。他每天坐车去上班。", "baker", {"zh": 2}, 3),
    # runs: 我今天用 | Python | 写了三个 | scripts. ‖ Then we went home.
    ("我今天用 Python 写了 3 个 scripts。Then we went home.", "joe", {"zh": 2, "en": 3}, 2),
])
def test_each_run_is_normalized_once_and_the_text_cleaned_and_split_once(
        synth, monkeypatch, text, voice, runs, sentences):
    calls = {fn.__name__: spy(monkeypatch, fn)
             for fn in (clean_text, split_sentences, normalize_en, normalize_zh)}
    result = synth.synthesize(SynthesisRequest(text=text, voice=voice, seed=1))
    assert result.duration_s > 1.0
    assert len(calls["clean_text"]) == 1  # one segment (no inline tags): cleaned once
    assert len(calls["split_sentences"]) == 1  # split once; no run here is over 80 chars
    assert len(calls["normalize_en"]) == runs.get("en", 0), calls["normalize_en"]
    assert len(calls["normalize_zh"]) == runs.get("zh", 0), calls["normalize_zh"]
    assert result.sentences == sentences
