"""Text → Qwen ids with the folder's tokenizer and CosyVoice's special tokens, as the reference."""

from __future__ import annotations

import pytest

from cosyvoice.runtime.text_tokens import TextTokenizer

pytestmark = pytest.mark.oracle
TEXTS = [
    "Hello, this is a voice cloning test.",
    "You are a helpful assistant.<|endofprompt|>希望你以后能够做的比我还好呦。",
    "[breath]收到好友从远方寄来的生日礼物，<strong>那份意外的惊喜</strong>[laughter]",
    "We read 2025 and 3.14 [AA1] [iàng] <|endofsystem|> <|im_start|>",
]


@pytest.mark.parametrize("version", [2, 3])
def test_text_ids_match_the_reference(version, oracle, request) -> None:
    folder = request.getfixturevalue(f"tiny_v{version}")
    want = oracle("text_tokens.py", folder=str(folder), texts=TEXTS, version=version)["ids"]
    tokenizer = TextTokenizer(folder / "CosyVoice-BlankEN", version)
    got = [tokenizer.encode(t) for t in TEXTS]
    assert got == want
    assert 151646 in got[1]  # <|endofprompt|>, the id CosyVoice3's LLM looks for
