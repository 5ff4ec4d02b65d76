"""The reference's HiFT vocoder (``HiFTGenerator`` / ``CausalHiFTGenerator``) on random weights:
its state dict, the waveform and source of each requested call, and its random numbers.

Runs inside the oracle's interpreter only. Where the reference draws noise:
- ``HiFTGenerator`` (v2) draws per call from the global generator: ``torch.manual_seed(seed)``
  precedes each call here, and our side draws from a generator with the same seed;
- ``CausalHiFTGenerator`` (v3) drew fixed noise at construction: it is returned
  (``phase_init``, ``sine_noise``) for our side to read from.
"""

import time

import torch
from flow_parity import build, perturb


def main(jobs):
    """One result per job: ``yaml_text``, ``seed``, ``mel`` and the ``cases`` to run."""
    return {"results": [run(**job) for job in jobs]}


def run(yaml_text, seed, mel, cases, f0_hz=0.0):
    hift = build(yaml_text, "hift")
    perturb(hift, seed)
    with torch.no_grad():  # random weights predict F0 near 0 Hz (unvoiced): lift it if asked
        hift.f0_predictor.classifier.bias.add_(f0_hz)
    state = {k: v.clone() for k, v in hift.state_dict().items()}
    causal = type(hift).__name__ == "CausalHiFTGenerator"
    waves, sources, seconds = [], [], []
    for case in cases:
        part = mel[:, :, case["start"]:case["end"]]
        torch.manual_seed(case["seed"])
        start = time.perf_counter()
        if causal:
            wave, source = hift.inference(part, finalize=case["finalize"])
        else:
            cache = sources[-1][:, :, -case["cache"]:] if case["cache"] else torch.zeros(1, 1, 0)
            wave, source = hift.inference(part, cache_source=cache)
        seconds.append(time.perf_counter() - start)
        waves.append(wave)
        sources.append(source)
    out = {"state": state, "waves": waves, "sources": sources, "seconds": seconds}
    if causal:
        gen = hift.m_source.l_sin_gen
        length = max(s.size(2) for s in sources)
        out["phase_init"] = gen.rand_ini.clone()
        out["sine_noise"] = gen.sine_waves[:, :length].clone()
    return out
