"""Prompt transcription on the real recognizers (no mocks): known text back within a WER
bound, Mandarin refused with a clear message by the English-only recognizer and read by
the multilingual one, and the ``asr`` model's place in the ModelManager."""

from __future__ import annotations

import re

import pytest

from bench._metrics import edit_distance, wer
from cosyvoice.asr.recognizers import ENGLISH, MULTILINGUAL, choose
from cosyvoice.asr.service import transcribe_file
from cosyvoice.asr.transcriber import (
    EN_MIN_LOGPROB,
    Transcriber,
    Transcript,
    TranscriptionError,
    normalize_language,
    to_simplified,
)
from cosyvoice.errors import ModelError
from tests.asr.known_prompts import EN_TEXT, ZH_LOOP_TEXT, ZH_TEXT, speak


def han(text: str) -> list[str]:
    return re.findall(r"[\u4e00-\u9fff]", text)


@pytest.mark.parametrize(("given", "code"), [
    (None, None), ("", None), ("auto", None), ("Mandarin", "zh"), ("中文", "zh"),
    ("zh-CN", "zh"), ("English", "en"), ("en", "en"), ("ja", "ja")])
def test_language_names_become_codes(given, code):
    assert normalize_language(given) == code


def test_auto_takes_the_multilingual_recognizer_only_where_installed(tmp_path):
    assert choose(tmp_path, "auto") is ENGLISH  # tmp_path has no whisper-base
    with pytest.raises(ModelError, match="run.sh --setup-only"):
        MULTILINGUAL.folder(tmp_path)
    with pytest.raises(ModelError, match="unknown recognizer"):
        choose(tmp_path, "whisper-large")


def test_asr_is_an_optional_lazy_model(tmp_path):
    from tests.conftest import local_services

    manager = local_services(tmp_path).manager
    asr = next(m for m in manager.states() if m["name"] == "asr")
    assert asr["state"] == "UNLOADED" and not asr["required"] and asr["lazy"]
    manager.load_many([m["name"] for m in manager.states() if m["required"]])
    assert manager.ready()  # readiness never waits for the recognizer


@pytest.mark.slow
@pytest.mark.parametrize("which", ["english_only", "multilingual"])
def test_an_english_prompt_gives_its_text(which, en_prompt, request):
    manager = request.getfixturevalue(which)
    out = transcribe_file(manager, en_prompt)
    assert out.language == "en"
    assert wer(EN_TEXT, out.text) <= 15.0, out.text
    assert 3.0 < out.audio_s < 12.0 and out.seconds >= out.recognize_s > 0


@pytest.mark.slow
def test_mandarin_with_only_the_english_recognizer_is_refused(english_only, zh_prompt):
    with pytest.raises(TranscriptionError, match="Mandarin") as auto:
        transcribe_file(english_only, zh_prompt)  # detected: not English
    assert "普通话" in str(auto.value) and "type the transcript" in str(auto.value)
    with pytest.raises(TranscriptionError, match="no recognizer for Mandarin") as asked:
        transcribe_file(english_only, zh_prompt, language="zh")
    assert "未安装普通话识别模型" in str(asked.value)
    assert asked.value.http_status == 422


@pytest.mark.parametrize(("recognizer", "text", "logprob", "looped", "refusal"), [
    (ENGLISH, "Thank you for watching.", -1.2, False, "does not sound like English"),
    (ENGLISH, "20,000,000,000,000", -0.1, True, "does not sound like English"),
    (ENGLISH, "", -0.1, False, "does not sound like English"),
    (ENGLISH, "The museum opens early.", -0.2, False, None),
    (MULTILINGUAL, "20,000,000,000,000", -0.1, True, "repeats itself"),
    (MULTILINGUAL, "", -0.1, False, "heard no words"),
    (MULTILINGUAL, "面条非常好吃", -1.2, False, None)])
def test_the_refusal_rule(recognizer, text, logprob, looped, refusal):
    """Auto language: the English-only recognizer refuses a low log-probability, a loop or no
    text; any recognizer refuses no text or a loop (a decode Whisper itself calls failed)."""
    rule = Transcriber(recognizer, model=None, device="cpu")
    heard = Transcript(text=text, language="en", language_probability=1.0,
                       recognizer=recognizer.name, audio_s=5.0, logprob=logprob)
    if refusal is None:
        rule._check_result(heard, None, looped)
    else:
        with pytest.raises(TranscriptionError, match=refusal):
            rule._check_result(heard, None, looped)


@pytest.mark.slow
def test_the_english_only_refusal_is_the_same_every_time(english_only, zh_prompt,
                                                         tmp_path_factory):
    """Decoding at temperature 0: Whisper's fallback to sampling drew a new text each run,
    and once took the Mandarin prompt for "Cheers" (a CI failure). A Mandarin reading the
    English decoder turns into a confident loop is refused by the loop rule."""
    loop_prompt = speak(tmp_path_factory.mktemp("asr-zh-loop"), "yunxi", ZH_LOOP_TEXT,
                        "zm_yunxi")
    for path in (zh_prompt, loop_prompt):
        refusals = []
        for _ in range(2):
            with pytest.raises(TranscriptionError, match="does not sound like English") as r:
                transcribe_file(english_only, path)
            refusals.append(r.value.logprob)
        assert refusals[0] == refusals[1], (path.name, refusals)
    assert refusals[0] > EN_MIN_LOGPROB  # the loop's log-probability alone would pass


@pytest.mark.slow
def test_mandarin_with_the_multilingual_recognizer(multilingual, zh_prompt):
    out = transcribe_file(multilingual, zh_prompt)
    assert out.language == "zh" and out.recognizer == "whisper-base"
    assert edit_distance(han(ZH_TEXT), han(out.text)) / len(han(ZH_TEXT)) <= 0.2, out.text
    assert out.text == to_simplified(out.text)  # simplified characters, as the app reads
    with pytest.raises(TranscriptionError, match="no recognizer for xx"):
        transcribe_file(multilingual, zh_prompt, language="xx")


@pytest.mark.slow
def test_the_recognizer_unloads_and_loads_again(english_only, en_prompt):
    transcribe_file(english_only, en_prompt)
    assert english_only.unload("asr")["freed"]
    assert next(m for m in english_only.states() if m["name"] == "asr")["state"] == "UNLOADED"
    assert wer(EN_TEXT, transcribe_file(english_only, en_prompt).text) <= 15.0


@pytest.mark.parametrize("maker", ["write_speech_1s", "write_speech_40s", "write_silence"])
def test_a_prompt_the_checks_refuse_is_refused_before_recognition(maker, english_only,
                                                                  tmp_path):
    from cosyvoice.errors import PromptError
    from tests.fixtures import make_prompts

    path = getattr(make_prompts, maker)(tmp_path)
    with pytest.raises(PromptError) as refused:
        transcribe_file(english_only, path)
    assert not isinstance(refused.value, TranscriptionError)  # the prompt checks' own
