"""The reference's flow model (``CausalMaskedDiffWithXvec`` / ``CausalMaskedDiffWithDiT``) on
random weights: its state dict and the mel it makes for each requested call.

Runs inside the oracle's interpreter only (tests/oracle/harness.py). The flow's noise is the
reference's own fixed sequence (seed 0, drawn at construction), so no noise travels.
"""

import time

import torch
from hyperpyyaml import load_hyperpyyaml


def build(yaml_text: str, part: str):
    """One part (``flow`` or ``hift``) of the YAML, built by hyperpyyaml as the reference does.

    Flow and HiFT are both built, in the YAML's order, so the causal HiFT draws its fixed noise
    from the same global generator state as in a released load (the flow reseeds it); the LLM
    is left out (it is built before that reseed)."""
    text = yaml_text.split("# gan related module")[0]
    return load_hyperpyyaml(text, overrides={"llm": None})[part].eval()


def perturb(module, seed: int) -> None:
    """Move every 1-D parameter (norm scales, biases) off its default by seeded noise."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in module.parameters():
            if param.ndim == 1:
                param.add_(0.1 * torch.randn(param.shape, generator=gen))


def main(jobs):
    """One result per job: ``yaml_text``, ``seed``, the inputs and the ``cases`` to run."""
    return {"results": [run(**job) for job in jobs]}


def run(yaml_text, seed, token, prompt_token, prompt_feat, embedding, cases):
    flow = build(yaml_text, "flow")
    perturb(flow, seed)
    state = {k: v.clone() for k, v in flow.state_dict().items()}
    mels, seconds = [], []
    for case in cases:
        part = token[:, :case["tokens"]]
        start = time.perf_counter()
        mel, _ = flow.inference(part, torch.tensor([part.size(1)]), prompt_token,
                                torch.tensor([prompt_token.size(1)]), prompt_feat,
                                torch.tensor([prompt_feat.size(1)]), embedding,
                                streaming=case["streaming"], finalize=case["finalize"])
        seconds.append(time.perf_counter() - start)
        mels.append(mel)
    return {"state": state, "mels": mels, "seconds": seconds}
