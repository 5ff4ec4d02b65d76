"""The reference's text tokenizer (``get_qwen_tokenizer``, as the YAML's ``get_tokenizer`` calls
it) on given texts, for a folder's CosyVoice-BlankEN."""

import os

from cosyvoice.tokenizer.tokenizer import get_qwen_tokenizer


def main(folder, texts, version=2):
    tokenizer = get_qwen_tokenizer(token_path=os.path.join(folder, "CosyVoice-BlankEN"),
                                   skip_special_tokens=True, version=f"cosyvoice{version}")
    return {"ids": [tokenizer.encode(t, allowed_special="all") for t in texts]}
