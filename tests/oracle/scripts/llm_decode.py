"""The reference LLM's decodes: sampled tokens and every step's log-probabilities.

``Qwen2LM.inference`` / ``CosyVoice3LM.inference`` run as the reference runs them (its RAS sampling
on the default generator, seeded per case), with a hook on ``llm_decoder`` recording each step.
``cases``: a list of dicts with text, prompt_text, prompt_speech, embedding, seed, max_steps.
"""

import torch
from oracle_model import load_parts


def decode(llm, text, prompt_text, prompt_speech, embedding, seed=0, max_steps=None):
    steps = []
    hook = llm.llm_decoder.register_forward_hook(
        lambda module, args, out: steps.append(out.log_softmax(dim=-1).squeeze(0).clone()))
    torch.manual_seed(seed)
    tokens = []
    lengths = {name: torch.tensor([t.shape[1]], dtype=torch.int32)
               for name, t in (("text", text), ("prompt_text", prompt_text),
                               ("prompt_speech", prompt_speech))}
    for token in llm.inference(text=text, text_len=lengths["text"], prompt_text=prompt_text,
                               prompt_text_len=lengths["prompt_text"],
                               prompt_speech_token=prompt_speech,
                               prompt_speech_token_len=lengths["prompt_speech"],
                               embedding=embedding):
        tokens.append(int(token))
        if max_steps is not None and len(tokens) >= max_steps:
            break
    hook.remove()
    return {"tokens": torch.tensor(tokens, dtype=torch.long), "logp": torch.stack(steps)}


def main(folder, cases):
    llm = load_parts(folder, parts=("llm",))["llm"]
    return {"results": [decode(llm, **case) for case in cases]}
