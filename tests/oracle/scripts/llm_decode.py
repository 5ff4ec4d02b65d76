"""The reference LLM's decodes: sampled tokens and every step's log-probabilities.

``Qwen2LM.inference`` / ``CosyVoice3LM.inference`` run as the reference runs them (its RAS sampling
on the default generator, seeded per case), with a hook on ``llm_decoder`` recording each step.
``cases``: a list of dicts with text, prompt_text, prompt_speech, embedding, seed, max_steps and
optionally ``forced``: a token list that replaces what ``sampling_ids`` picks (teacher forcing
through the reference's own decode loop; tokens below the stop ids never stop it).
"""

import time

import torch
from oracle_model import load_parts


def decode(llm, text, prompt_text, prompt_speech, embedding, seed=0, max_steps=None,
           forced=None):
    steps = []
    if forced is not None:
        llm.sampling_ids = lambda scores, decoded, sampling, ignore_eos=True: forced[len(decoded)]
        max_steps = len(forced)
    hook = llm.llm_decoder.register_forward_hook(
        lambda module, args, out: steps.append(out.log_softmax(dim=-1).squeeze(0).clone()))
    torch.manual_seed(seed)
    tokens = []
    start, cpu_start = time.perf_counter(), time.process_time()
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
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    hook.remove()
    llm.__dict__.pop("sampling_ids", None)
    return {"tokens": torch.tensor(tokens, dtype=torch.long), "logp": torch.stack(steps),
            "seconds": seconds, "cpu_seconds": cpu_seconds}


def main(folder, cases):
    llm = load_parts(folder, parts=("llm",))["llm"]
    return {"results": [decode(llm, **case) for case in cases]}
