"""Oracle: the reference's repetition-aware sampling (``cosyvoice.utils.common.ras_sampling``)
decoding a fixed sequence of log-probabilities, each step's token appended to the history."""

import torch
from cosyvoice.utils.common import ras_sampling


def main(logps, seed, top_p, top_k, win_size, tau_r):
    torch.manual_seed(seed)
    decoded = []
    for step in logps:
        decoded.append(ras_sampling(step.clone(), decoded, None, top_p=top_p, top_k=top_k,
                                    win_size=win_size, tau_r=tau_r))
    return {"tokens": torch.tensor(decoded)}
