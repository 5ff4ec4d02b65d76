"""Random weights in the released layout, made by the reference's own modules.

The folder already holds the YAML and ``CosyVoice-BlankEN/config.json``; this builds the reference's
``llm``, ``flow`` and ``hift`` from them (hyperpyyaml, as the reference's loader does) and saves
their state dicts as ``llm.pt``/``flow.pt``/``hift.pt``, so keys and shapes are the released ones.
Every 1-D parameter (norm scales, biases) is moved off its default (ones/zeros) by seeded noise,
so a runtime that skipped a scale or a bias would not match by accident.
"""

import os

import torch
from oracle_model import load_configs


def main(folder: str, seed: int = 0, parts=("llm", "flow", "hift")) -> dict:
    configs = load_configs(folder)
    gen = torch.Generator().manual_seed(seed)
    shapes = {}
    for part in parts:
        module = configs[part]
        with torch.no_grad():
            for param in module.parameters():
                if param.ndim == 1:
                    param.add_(0.1 * torch.randn(param.shape, generator=gen))
        state = module.state_dict()
        torch.save(state, os.path.join(folder, f"{part}.pt"))
        shapes[part] = {k: list(v.shape) for k, v in state.items()}
    return {"shapes": shapes}
