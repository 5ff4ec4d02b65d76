"""Tiny flow/HiFT configurations for the parity tests (the released YAML with small widths),
and the per-case runners that the tests and ``bench/cosyvoice_parity.py`` share.

One table, :data:`TINY`, says what shrinks, by YAML block and key; :func:`tiny_yaml` writes it
into the reference's example YAML (for the oracle, which builds from YAML) and
:func:`tiny_flow_config` / :func:`tiny_hift_config` give our typed configs from the same table.
The released-fixed sizes stay: 80 mels, 192-d speaker vectors, 6561 tokens, 24 kHz, the
upsample rates, and the v2 encoder's width of 512 (the reference hard-codes it in its
look-ahead and upsampling layers).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import torch

from cosyvoice.runtime.flow import CausalFlow, FlowConfig
from cosyvoice.runtime.hift import HiFTConfig, HiFTGenerator
from tests.oracle.harness import oracle_dir

TINY: dict[int, dict[str, dict[str, object]]] = {
    2: {
        "encoder": {"attention_heads": 4, "linear_units": 64, "num_blocks": 1},
        "estimator": {"channels": [32], "n_blocks": 1, "num_mid_blocks": 2, "num_heads": 2,
                      "attention_head_dim": 16},
        "hift": {"base_channels": 32},
        "f0_predictor": {"cond_channels": 16},
    },
    3: {
        "pre_lookahead_layer": {"channels": 32},
        "estimator": {"dim": 64, "depth": 2, "heads": 2, "dim_head": 32},
        "hift": {"base_channels": 32},
        "f0_predictor": {"cond_channels": 16},
    },
}
_BLOCK = re.compile(r"^\s*(\w+): !new:")
_KEY = re.compile(r"^(\s+)(\w+): (.*)$")


def tiny_yaml(version: int) -> str:
    """The reference's ``cosyvoice{version}.yaml`` with the :data:`TINY` values written in."""
    root = oracle_dir()
    if root is None:
        raise FileNotFoundError("the reference's configs (shared/oracles/cosyvoice) are not found")
    lines, block, done = [], None, set()
    for line in (root / "configs" / f"cosyvoice{version}.yaml").read_text().splitlines():
        opened = _BLOCK.match(line)
        key = _KEY.match(line)
        if opened:
            block = opened.group(1)
        elif key and key.group(2) in TINY[version].get(block, {}):
            value = TINY[version][block][key.group(2)]
            line = f"{key.group(1)}{key.group(2)}: {value}"
            done.add((block, key.group(2)))
        lines.append(line)
    wanted = {(b, k) for b, keys in TINY[version].items() for k in keys}
    if done != wanted:
        raise ValueError(f"tiny config: keys not found in the YAML: {sorted(wanted - done)}")
    return "\n".join(lines) + "\n"


def tiny_flow_config(version: int) -> FlowConfig:
    tiny = TINY[version]
    if version == 2:
        return FlowConfig(version=2, input_size=512, encoder=dict(tiny["encoder"]),
                          estimator=dict(tiny["estimator"]))
    return FlowConfig(version=3, input_size=80,
                      lookahead_channels=int(tiny["pre_lookahead_layer"]["channels"]),
                      estimator=dict(tiny["estimator"]))


def tiny_hift_config(version: int) -> HiFTConfig:
    tiny = TINY[version]
    return HiFTConfig(causal=version == 3, base_channels=int(tiny["hift"]["base_channels"]),
                      f0_cond_channels=int(tiny["f0_predictor"]["cond_channels"]))


def run_flow_case(flow: CausalFlow, x: dict, case: dict) -> torch.Tensor:
    """Our mel for one case as the oracle's ``flow_parity.py`` runs it (the first
    ``case["tokens"]`` tokens, ``streaming``/``finalize`` as given)."""
    token = x["token"][:, :case["tokens"]]
    return flow.inference(token, torch.tensor([token.size(1)]), x["prompt_token"],
                          torch.tensor([x["prompt_token"].size(1)]), x["prompt_feat"],
                          x["embedding"], streaming=case["streaming"], finalize=case["finalize"])


def run_hift_case(hift: HiFTGenerator, mel: torch.Tensor, case: dict,
                  sources: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Our waveform and source for one case as the oracle's ``hift_parity.py`` runs it: frames
    ``start:end``, the previous source's tail as ``cache_source`` (v2), the same seed."""
    part = mel[:, :, case["start"]:case["end"]]
    cache = sources[-1][:, :, -case["cache"]:] if case["cache"] else None
    return hift.inference(part, cache_source=cache, finalize=case["finalize"],
                          generator=torch.Generator().manual_seed(case["seed"]))


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """Tiny tensors on a shared CPU: one thread (and so one for the oracle's subprocess, which
    inherits the count) runs them tens of times faster than several threads spinning."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
