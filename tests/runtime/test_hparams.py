"""The released YAML read as data: tags never executed, !ref resolved, typed configs."""

from __future__ import annotations

import pytest

from cosyvoice.runtime.hparams import CosyVoiceHParams, HParamsError, Tagged, load_yaml
from tests.oracle.harness import oracle_dir


def shipped(version: int) -> CosyVoiceHParams:
    base = oracle_dir()
    if base is None:
        pytest.skip("the reference's example configs (shared/oracles/cosyvoice) are not here")
    return CosyVoiceHParams.from_file(base / "configs" / f"cosyvoice{version}.yaml")


@pytest.mark.parametrize("version,llm,flow,hift", [
    (2, "Qwen2LM", "CausalMaskedDiffWithXvec", "HiFTGenerator"),
    (3, "CosyVoice3LM", "CausalMaskedDiffWithDiT", "CausalHiFTGenerator"),
])
def test_shipped_configs(version, llm, flow, hift) -> None:
    hp = shipped(version)
    assert hp.version == version
    assert (hp.sample_rate, hp.token_frame_rate, hp.token_mel_ratio, hp.chunk_size) == (
        24000, 25, 2, 25)
    assert hp.section("llm").class_name == llm
    assert hp.section("flow").class_name == flow
    assert hp.section("hift").class_name == hift
    assert (hp.llm.llm_input_size, hp.llm.llm_output_size, hp.llm.speech_token_size) == (
        896, 896, 6561)
    assert (hp.llm.sampling.top_p, hp.llm.sampling.top_k, hp.llm.sampling.win_size,
            hp.llm.sampling.tau_r) == (0.8, 25, 10, 0.1)
    decoder = hp.section("flow").kwargs["decoder"]
    # "!ref <chunk_size> * <token_mel_ratio>" is arithmetic on resolved references.
    assert decoder.kwargs["estimator"].kwargs["static_chunk_size"] == 50
    cfm = decoder.kwargs["cfm_params"]
    assert cfm.target == "omegaconf.DictConfig"
    assert cfm.kwargs["content"]["sigma_min"] == 1e-06  # a YAML 1.2 float, not a string
    assert cfm.kwargs["content"]["inference_cfg_rate"] == 0.7
    # !apply nodes are data: the seeds named at the top are not set.
    assert hp.doc["__set_seed1"] == Tagged("apply", "random.seed", args=[1986])


def test_tags_are_never_executed(tmp_path) -> None:
    marker = tmp_path / "ran"
    doc = load_yaml(f"""
boom: !apply:os.system ["touch {marker}"]
obj: !new:os.remove
    path: {marker}
fn: !name:builtins.exec
""")
    assert not marker.exists()
    assert doc["boom"] == Tagged("apply", "os.system", args=[f"touch {marker}"])
    assert doc["obj"].kwargs == {"path": str(marker)}
    assert doc["fn"] == Tagged("name", "builtins.exec")


def test_refs_resolve_nested_and_arithmetic() -> None:
    doc = load_yaml("""
a: 3
b: !ref <a>
c: !ref (<b> + 1) * <a> // 2
d: !new:x.Y
    size: !ref <c>
    inner: !ref <d2>
d2: [1, 2]
""")
    assert (doc["b"], doc["c"]) == (3, 6)
    assert doc["d"].kwargs == {"size": 6, "inner": [1, 2]}


@pytest.mark.parametrize("text,match", [
    ("a: !ref <missing>", "no such key"),
    ("a: !ref <a>", "refers to itself"),
    ("a: 1\nb: !ref __import__('os') <a>", "cannot read"),
    ("a: !ref <b>.x\nb: 1", "Attribute is not allowed"),
    ("- 1\n- 2", "not a mapping"),
    ("a: !!python/object:os.system {}", "not a readable YAML"),
    ("a: [1", "not a readable YAML"),
    ("a: !!int abc", "not a readable YAML"),
    ("a: !!float [1]", "not a readable YAML"),
    ("a: !!timestamp x", "not a readable YAML"),
])
def test_bad_yaml_is_a_clear_error(text, match) -> None:
    with pytest.raises(HParamsError, match=match):
        load_yaml(text)


def test_llm_class_is_checked() -> None:
    with pytest.raises(HParamsError, match="expected Qwen2LM or CosyVoice3LM"):
        CosyVoiceHParams.from_text("""
sample_rate: 22050
token_frame_rate: 50
token_mel_ratio: 1
llm: !new:cosyvoice.llm.llm.TransformerLM
    text_encoder_input_size: 512
""")
