"""Our CosyVoice LLM against the reference's, same tiny random weights, same inputs.

Per version, one oracle run decodes 50 tokens with the reference's RAS sampling (seeded) and records
every step's log-probabilities. Ours then (a) follows the reference's tokens and must give the same
log-probabilities at every step (max |diff| <= 1e-4), and (b) samples on its own with the same seed
and must draw the very same tokens. A short text decoded to its stop (stop token or the max-length
rule) must also end at the same token.
"""

from __future__ import annotations

import pytest
import torch

from cosyvoice.runtime.folder import check_folder, load_part
from cosyvoice.runtime.llm import END_OF_PROMPT_ID, CosyVoiceLM, LLMInputError, StopRule
from cosyvoice.runtime.sampling import RasSampler

pytestmark = pytest.mark.oracle
STEPS = 50
SEED = 1234


def inputs(version: int, text_len: int) -> dict:
    gen = torch.Generator().manual_seed(100 + version)
    prompt_text = torch.randint(0, 5000, (1, 8), generator=gen, dtype=torch.int32)
    if version == 3:  # "You are a helpful assistant.<|endofprompt|>" style prefix
        prompt_text[0, 5] = END_OF_PROMPT_ID
    return {"text": torch.randint(0, 5000, (1, text_len), generator=gen, dtype=torch.int32),
            "prompt_text": prompt_text,
            "prompt_speech": torch.randint(0, 6561, (1, 30), generator=gen, dtype=torch.int32),
            "embedding": torch.randn(1, 192, generator=gen)}


_REF: dict[int, list[dict]] = {}
LONG = {"text_len": 26, "seed": SEED, "max_steps": STEPS}
SHORT = {"text_len": 2, "seed": SEED + 1, "max_steps": None}


def reference(version: int, folder, oracle) -> list[dict]:
    """The oracle's decodes of the LONG and SHORT cases, one oracle run per version."""
    if version not in _REF:
        cases = [dict(inputs(version, c["text_len"]), seed=c["seed"], max_steps=c["max_steps"])
                 for c in (LONG, SHORT)]
        _REF[version] = oracle("llm_decode.py", folder=str(folder), cases=cases)["results"]
    return _REF[version]


def ours(folder) -> CosyVoiceLM:
    model = load_part(check_folder(folder, model_version(folder)), "llm")
    assert isinstance(model, CosyVoiceLM)
    return model


def model_version(folder) -> int:
    return 3 if (folder / "cosyvoice3.yaml").exists() else 2


def sample(lm: CosyVoiceLM, args: dict, seed: int, limit: int | None) -> list[int]:
    torch.manual_seed(seed)
    sampler = RasSampler(lm.config.sampling)
    tokens = []
    for token in lm.inference(args["text"], args["prompt_text"], args["prompt_speech"], sampler):
        tokens.append(token)
        if limit is not None and len(tokens) >= limit:
            break
    return tokens


@pytest.mark.parametrize("version", [2, 3])
def test_llm_matches_the_reference_over_a_50_token_decode(version, oracle, request) -> None:
    folder = request.getfixturevalue(f"tiny_v{version}")
    # 26 text tokens: min length 52 > 50, so no stop token can end the decode early.
    args = inputs(version, text_len=26)
    ref = reference(version, folder, oracle)[0]
    assert ref["tokens"].numel() == STEPS
    lm = ours(folder)

    steps: list[torch.Tensor] = []
    forced = ref["tokens"].tolist()
    lm_input = lm.prompt_input(args["text"], args["prompt_text"], args["prompt_speech"])
    list(lm.decode(lm_input, StopRule.for_text(26), sampler=None, forced=forced,
                   on_step=lambda i, logp: steps.append(logp.clone())))
    ours_logp = torch.stack(steps[:STEPS])
    assert ours_logp.shape == ref["logp"].shape
    per_step = (ours_logp - ref["logp"]).abs().amax(dim=1)
    assert float(per_step.max()) <= 1e-4, per_step

    assert sample(lm, args, SEED, STEPS) == forced


@pytest.mark.parametrize("version", [2, 3])
def test_llm_stops_where_the_reference_stops(version, oracle, request) -> None:
    folder = request.getfixturevalue(f"tiny_v{version}")
    args = inputs(version, text_len=2)  # min 4, max 40 tokens
    ref = reference(version, folder, oracle)[1]
    got = sample(ours(folder), args, SEED + 1, limit=None)
    assert got == ref["tokens"].tolist()
    # v2 masks its stop token below the minimum; v3 masks id S only (the reference's rule), so
    # its other stop ids S+1.. may end a decode at any step.
    assert len(got) <= 40 and (version == 3 or len(got) >= 4)


def test_cosyvoice3_text_without_endofprompt_is_refused(tiny_v3) -> None:
    lm = ours(tiny_v3)
    args = inputs(3, text_len=4)
    args["prompt_text"][args["prompt_text"] == END_OF_PROMPT_ID] = 7
    with pytest.raises(LLMInputError, match="endofprompt"):
        lm.prompt_input(args["text"], args["prompt_text"], args["prompt_speech"])
