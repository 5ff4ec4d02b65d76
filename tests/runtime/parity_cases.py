"""What the flow/HiFT parity tests and ``bench/cosyvoice_parity.py`` share: the YAML of a size
(the reference's example config, or its tiny variant from ``bench/make_random_cosyvoice.py``),
our configs read from that same YAML, and the per-case runners that mirror the oracle scripts
``tests/oracle/scripts/flow_parity.py`` and ``hift_parity.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from bench.make_random_cosyvoice import config_text
from cosyvoice.runtime.flow import CausalFlow, FlowConfig, build_flow
from cosyvoice.runtime.hift import HiFTConfig, HiFTGenerator, build_hift
from cosyvoice.runtime.hparams import CosyVoiceHParams


def yaml_text(version: int, size: str = "tiny") -> str:
    """``cosyvoice{version}.yaml`` as released (``real``) or with tiny widths (``tiny``)."""
    return config_text(version, size)


def our_flow(text: str) -> CausalFlow:
    """Our flow model for the YAML ``text`` (read as data), random weights."""
    return build_flow(FlowConfig.from_tagged(CosyVoiceHParams.from_text(text).section("flow")))


def our_hift(text: str) -> HiFTGenerator:
    """Our HiFT for the YAML ``text`` (read as data), random weights."""
    hparams = CosyVoiceHParams.from_text(text)
    return build_hift(HiFTConfig.from_tagged(hparams.section("hift")),
                      FlowConfig.from_tagged(hparams.section("flow")))


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
