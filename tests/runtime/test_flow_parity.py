"""Our flow model (v2 U-Net, v3 DiT) against the reference's on the same random weights and
inputs: the mel of a whole utterance, of a streamed call, and of a streamed look-ahead call."""

from __future__ import annotations

import pytest
import torch

from tests.runtime.parity_cases import (  # noqa: F401 (fixture)
    one_thread,
    our_flow,
    run_flow_case,
    yaml_text,
)

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("one_thread")]

VERSIONS = (2, 3)
# 12 prompt + 40 new tokens: 104 mel frames, over two 50-frame attention chunks when streaming
CASES = [
    {"tokens": 40, "streaming": False, "finalize": True},
    {"tokens": 40, "streaming": True, "finalize": True},
    {"tokens": 28, "streaming": True, "finalize": False},
]


def inputs(version: int) -> dict:
    gen = torch.Generator().manual_seed(100 + version)
    return {
        "token": torch.randint(0, 6561, (1, 40), generator=gen),
        "prompt_token": torch.randint(0, 6561, (1, 12), generator=gen),
        "prompt_feat": torch.randn(1, 24, 80, generator=gen),
        "embedding": torch.randn(1, 192, generator=gen),
    }


@pytest.fixture(scope="module")
def reference(oracle, request) -> dict[int, dict]:
    """The oracle's weights and mels for both versions, from one oracle process."""
    request.getfixturevalue("one_thread")  # before the oracle starts: it inherits the count
    jobs = [{"yaml_text": yaml_text(v), "seed": v, "cases": CASES, **inputs(v)} for v in VERSIONS]
    return dict(zip(VERSIONS, oracle("flow_parity.py", jobs=jobs)["results"], strict=True))


@pytest.mark.parametrize("version", VERSIONS)
def test_flow_mel_matches_the_reference(reference, version: int) -> None:
    x, ref = inputs(version), reference[version]
    flow = our_flow(yaml_text(version))
    flow.load_state_dict(ref["state"], strict=True)
    flow.eval()
    for case, expected in zip(CASES, ref["mels"], strict=True):
        mel = run_flow_case(flow, x, case)
        assert mel.shape == expected.shape, case
        assert (mel - expected).abs().max().item() <= 1e-4, case
        assert expected.abs().max().item() > 0.1, "a mel of zeros would match by accident"


def test_streaming_masks_change_the_mel(reference) -> None:
    """The streamed and whole-utterance mels differ: the chunk masks are really in force."""
    for version in VERSIONS:
        whole, streamed = reference[version]["mels"][:2]
        assert (whole - streamed).abs().max().item() > 1e-3, version
