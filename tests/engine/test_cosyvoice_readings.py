"""Pronunciation overrides on the CosyVoice engine: CosyVoice3's inline phone tokens, a
note (never a silent drop) where the model cannot take them."""

from cosyvoice.engine.base import EngineRequest
from cosyvoice.engine.cosyvoice.engine import CosyVoiceEngine, spoken_text
from cosyvoice.frontend.plan import plan_text


def request(text: str) -> EngineRequest:
    return EngineRequest("preset", plan_text(text, 500), "")


def test_cosyvoice3_reads_overrides_as_its_phone_tokens():
    req = request("这很{重要|zhong4 yao4}。Say {tomato|T AH0 M AA1 T OW2} now.")
    tokens = CosyVoiceEngine(None, 3)._phone_tokens(req)
    said = [spoken_text(s, tokens) for s in req.sentences]
    assert said == ["这很[zh][òng][y][ào]。", "Say [T][AH0][M][AA1][T][OW2] now."]
    assert req.notes == []


def test_a_syllable_without_a_token_is_read_as_written_with_a_note():
    req = request("{略|lve4}{嗯|n2}。")
    tokens = CosyVoiceEngine(None, 3)._phone_tokens(req)
    assert spoken_text(req.sentences[0], tokens) == "[l][vè]嗯。"
    assert len(req.notes) == 1 and "{嗯|n2}" in req.notes[0]


def test_cosyvoice2_says_it_did_not_apply_them():
    req = request("这很{重要|zhong4 yao4}。")
    assert CosyVoiceEngine(None, 2)._phone_tokens(req) is None
    assert "not supported by CosyVoice2" in req.notes[0] and "{重要|zhong4 yao4}" in req.notes[0]
    assert spoken_text(req.sentences[0]) == "这很重要。"
