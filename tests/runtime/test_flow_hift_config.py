"""Our flow/HiFT configs read from the released example YAMLs (as data, via hparams) carry the
released sizes, and a section of a class we do not build is refused by name."""

from __future__ import annotations

import pytest

from cosyvoice.runtime.flow import FlowConfig, FlowV3, build_flow
from cosyvoice.runtime.hift import HiFTConfig
from cosyvoice.runtime.hparams import CosyVoiceHParams, Tagged
from tests.oracle.harness import oracle_dir


def released(version: int) -> CosyVoiceHParams:
    root = oracle_dir()
    if root is None:
        pytest.skip("the reference's example configs (shared/oracles/cosyvoice) are not here")
    return CosyVoiceHParams.from_file(root / "configs" / f"cosyvoice{version}.yaml")


def test_v2_sections() -> None:
    hp = released(2)
    flow = FlowConfig.from_tagged(hp.section("flow"))
    assert (flow.version, flow.input_size, flow.chunk_size) == (2, 512, 25)
    assert flow.pre_lookahead_len == 3
    assert (flow.cfg_rate, flow.t_scheduler) == (0.7, "cosine")
    assert flow.estimator["channels"] == [256] and flow.estimator["num_mid_blocks"] == 12
    hift = HiFTConfig.from_tagged(hp.section("hift"))
    assert not hift.causal and hift.upsample_rates == [8, 5, 3] and hift.samples_per_frame == 480
    assert (hift.n_fft, hift.hop_len, hift.f0_cond_channels) == (16, 4, 512)


def test_v3_sections() -> None:
    hp = released(3)
    flow = FlowConfig.from_tagged(hp.section("flow"))
    assert (flow.version, flow.input_size, flow.chunk_size) == (3, 80, 25)
    assert flow.lookahead_channels == 1024
    assert flow.estimator["depth"] == 22 and flow.estimator["dim"] == 1024
    hift = HiFTConfig.from_tagged(hp.section("hift"))
    assert hift.causal and hift.conv_pre_look_right == 4


def test_an_unknown_flow_class_is_named() -> None:
    node = Tagged("new", "cosyvoice.flow.flow.MaskedDiffWithXvec", {})
    with pytest.raises(ValueError, match="MaskedDiffWithXvec"):
        FlowConfig.from_tagged(node)
    with pytest.raises(ValueError, match="HiFiGan"):
        HiFTConfig.from_tagged(Tagged("new", "cosyvoice.hifigan.hifigan.HiFiGan", {}))


def test_v3_builds_the_dit_flow() -> None:
    assert isinstance(build_flow(FlowConfig(version=3, input_size=80,
                                            estimator={"dim": 32, "depth": 1, "heads": 2,
                                                       "dim_head": 16})), FlowV3)
