"""Text → Qwen token ids with a model folder's ``CosyVoice-BlankEN`` tokenizer.

The released tokenizer is Qwen2's byte-level BPE (151,643 ordinary tokens, then
``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``). CosyVoice registers more special tokens on
load, in a fixed order, so they get fixed ids from 151,646 on (``<|endofprompt|>`` = 151646):
the lists below are that order — CosyVoice2's 19, and for CosyVoice3 the same 19, then
``<|endofsystem|>`` and 260 phone tokens (ARPAbet with stress, pinyin initials and finals with
tones) written ``[AA0]``, ``[iàng]``…. The model was trained with these ids, so the order is a
format fact, checked against the reference in tests/runtime/test_text_tokens.py.
"""

from __future__ import annotations

from pathlib import Path

COSYVOICE2_SPECIALS = [
    "<|im_start|>", "<|im_end|>", "<|endofprompt|>", "[breath]", "<strong>", "</strong>",
    "[noise]", "[laughter]", "[cough]", "[clucking]", "[accent]", "[quick_breath]",
    "<laughter>", "</laughter>", "[hissing]", "[sigh]", "[vocalized-noise]", "[lipsmack]",
    "[mn]"
]
_PHONES = """
AA AA0 AA1 AA2 AE AE0 AE1 AE2 AH AH0 AH1 AH2 AO AO0 AO1 AO2 AW AW0 AW1 AW2 AY AY0 AY1 AY2 B
CH D DH EH EH0 EH1 EH2 ER ER0 ER1 ER2 EY EY0 EY1 EY2 F G HH IH IH0 IH1 IH2 IY IY0 IY1 IY2 JH
K L M N NG OW OW0 OW1 OW2 OY OY0 OY1 OY2 P R S SH T TH UH UH0 UH1 UH2 UW UW0 UW1 UW2 V W Y Z
ZH a ai an ang ao b c ch d e ei en eng f g h i ian in ing iu ià iàn iàng iào iá ián iáng iáo
iè ié iòng ióng iù iú iā iān iāng iāo iē iě iōng iū iǎ iǎn iǎng iǎo iǒng iǔ j k l m n o ong
ou p q r s sh t u uang ue un uo uà uài uàn uàng uá uái uán uáng uè ué uì uí uò uó uā uāi uān
uāng uē uě uī uō uǎ uǎi uǎn uǎng uǐ uǒ vè w x y z zh à ài àn àng ào á ái án áng áo è èi èn
èng èr é éi én éng ér ì ìn ìng í ín íng ò òng òu ó óng óu ù ùn ú ún ā āi ān āng āo ē ēi ēn
ēng ě ěi ěn ěng ěr ī īn īng ō ōng ōu ū ūn ǎ ǎi ǎn ǎng ǎo ǐ ǐn ǐng ǒ ǒng ǒu ǔ ǔn ǘ ǚ ǜ
"""
COSYVOICE3_SPECIALS = [*COSYVOICE2_SPECIALS, "<|endofsystem|>",
                       *(f"[{p}]" for p in _PHONES.split())]


class TextTokenizer:
    """``encode(text) -> list[int]``: the folder's Qwen tokenizer plus CosyVoice's specials."""

    def __init__(self, blank_en: str | Path, version: int):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(blank_en), local_files_only=True)
        specials = COSYVOICE3_SPECIALS if version == 3 else COSYVOICE2_SPECIALS
        self.tokenizer.add_special_tokens({
            "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
            "additional_special_tokens": list(specials)})

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer([text])["input_ids"][0])

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)
