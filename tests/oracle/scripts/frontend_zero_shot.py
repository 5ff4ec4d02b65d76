"""The reference frontend's ``frontend_zero_shot`` / ``frontend_cross_lingual`` model inputs, and
its tokenizer's ids for ``texts``. ``cross_text``: the cross-lingual text if it differs
(CosyVoice3's starts with the system prompt).

The frontend is built from the folder as the reference's CosyVoice2/3 classes build it; its
``load_wav`` (torchaudio I/O, absent here) returns the given 16 kHz / 24 kHz waveforms, so both
frontends start from the same samples. Texts are passed already normalised (the reference's
``text_normalize`` runs before ``frontend_zero_shot`` and is not part of this comparison).
"""

import cosyvoice.cli.frontend as ref_frontend
from oracle_model import load_frontend


def main(folder, text, prompt_text, prompt_16k, prompt_24k, texts=(), cross_text=None):
    frontend = load_frontend(folder)
    ref_frontend.load_wav = lambda key, sr: {16000: prompt_16k, 24000: prompt_24k}[sr]
    zero_shot = frontend.frontend_zero_shot(text, prompt_text, "prompt", 24000, "")
    cross = frontend.frontend_cross_lingual(cross_text or text, "prompt", 24000, "")
    ids = [frontend.tokenizer.encode(t, allowed_special=frontend.allowed_special) for t in texts]
    return {"zero_shot": dict(zero_shot), "cross_lingual": dict(cross), "text_ids": ids}
