"""The reference LLM's decode: sampled tokens and every step's log-probabilities.

``Qwen2LM.inference`` / ``CosyVoice3LM.inference`` run as the reference runs them (its RAS sampling
on the default generator, seeded here), with a hook on ``llm_decoder`` recording each step.
"""

import torch
from oracle_model import load_parts


def main(folder, text, prompt_text, prompt_speech, embedding, seed=0, max_steps=None):
    llm = load_parts(folder, parts=("llm",))["llm"]
    steps = []
    llm.llm_decoder.register_forward_hook(
        lambda module, args, out: steps.append(out.log_softmax(dim=-1).squeeze(0).clone()))
    torch.manual_seed(seed)
    tokens = []
    for token in llm.inference(text=text, text_len=torch.tensor([text.shape[1]], dtype=torch.int32),
                               prompt_text=prompt_text,
                               prompt_text_len=torch.tensor([prompt_text.shape[1]], dtype=torch.int32),
                               prompt_speech_token=prompt_speech,
                               prompt_speech_token_len=torch.tensor([prompt_speech.shape[1]], dtype=torch.int32),
                               embedding=embedding):
        tokens.append(int(token))
        if max_steps is not None and len(tokens) >= max_steps:
            break
    return {"tokens": torch.tensor(tokens, dtype=torch.long), "logp": torch.stack(steps)}
