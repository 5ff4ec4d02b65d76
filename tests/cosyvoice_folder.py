"""Tiny CosyVoice2/3 folders in the released layout, made by OUR code — no oracle needed.

    PYTHONPATH=. .venv/bin/python tests/cosyvoice_folder.py --version 3 OUT_DIR

The YAML is our own tiny one with the released structure (the same ``!new:`` sections, keys and
``!ref``s; small widths), read by our hparams reader like a released one. The ``.pt`` state dicts
are those of OUR modules built from that YAML (``cosyvoice.runtime.folder``'s builders), their
weights drawn from a seeded generator (every 1-D parameter moved off its default, as the oracle's
maker does; the LLM head's stop rows zeroed, so a decode is not cut at its first token), so the
strict loader sees the keys and shapes it expects. The tokenizer and the two
ONNX models are the stand-ins of ``bench/cosyvoice_standins.py``; ``spk2info.pt`` holds two
speakers in the released form. A few seconds of CPU; used by the app and engine tests, which must
run where the reference (tests/oracle) is absent. Parity with the reference is proven on the
oracle's folders (tests/runtime), not on these.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.cosyvoice_standins import QWEN_REAL, QWEN_TINY, write_standins  # noqa: E402

SPEAKERS = ("tiny-female", "tiny-male")
# CosyVoice3 at the released sizes: the values our tiny YAML shrinks, by key path (the
# released cosyvoice3.yaml's; every other value is already the released one). With them and
# Qwen2-0.5B's config a folder needs no oracle (GPU and memory benches: bench/cosyvoice_gpu.py).
REAL_V3 = {
    "llm_input_size": 896, "llm_output_size": 896,
    "flow.pre_lookahead_layer.channels": 1024,
    "flow.decoder.estimator.dim": 1024, "flow.decoder.estimator.depth": 22,
    "flow.decoder.estimator.heads": 16, "flow.decoder.estimator.dim_head": 64,
    "hift.base_channels": 512, "hift.f0_predictor.cond_channels": 512,
}

_HEAD = """\
# A tiny CosyVoice{v} configuration in the released structure (tests only).
__set_seed1: !apply:random.seed [1986]
sample_rate: 24000
llm_input_size: 32
llm_output_size: 32
spk_embed_dim: 192
qwen_pretrain_path: ''
token_frame_rate: 25
token_mel_ratio: 2
chunk_size: 25
num_decoding_left_chunks: -1

llm: !new:cosyvoice.llm.llm.{llm}
    llm_input_size: !ref <llm_input_size>
    llm_output_size: !ref <llm_output_size>
    speech_token_size: 6561
    length_normalized_loss: True
    lsm_weight: 0
    mix_ratio: [5, 15]
    llm: !new:cosyvoice.llm.llm.Qwen2Encoder
        pretrain_path: !ref <qwen_pretrain_path>
    sampling: !name:cosyvoice.utils.common.ras_sampling
        top_p: 0.8
        top_k: 25
        win_size: 10
        tau_r: 0.1
"""

_CFM = """\
    decoder: !new:cosyvoice.flow.flow_matching.CausalConditionalCFM
        in_channels: 240
        n_spks: 1
        spk_emb_dim: 80
        cfm_params: !new:omegaconf.DictConfig
            content:
                sigma_min: 1e-06
                solver: 'euler'
                t_scheduler: 'cosine'
                training_cfg_rate: 0.2
                inference_cfg_rate: 0.7
                reg_loss_type: 'l1'
"""

_FLOW = {2: """\
flow: !new:cosyvoice.flow.flow.CausalMaskedDiffWithXvec
    input_size: 64
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 6561
    input_frame_rate: !ref <token_frame_rate>
    only_mask_loss: True
    token_mel_ratio: !ref <token_mel_ratio>
    pre_lookahead_len: 3
    encoder: !new:cosyvoice.transformer.upsample_encoder.UpsampleConformerEncoder
        output_size: 64
        attention_heads: 2
        linear_units: 64
        num_blocks: 1
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.1
        normalize_before: True
        input_layer: 'linear'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        input_size: 64
        use_cnn_module: False
        macaron_style: False
        static_chunk_size: !ref <chunk_size>
""" + _CFM + """\
        estimator: !new:cosyvoice.flow.decoder.CausalConditionalDecoder
            in_channels: 320
            out_channels: 80
            channels: [32]
            dropout: 0.0
            attention_head_dim: 16
            n_blocks: 1
            num_mid_blocks: 1
            num_heads: 2
            act_fn: 'gelu'
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>
""", 3: """\
flow: !new:cosyvoice.flow.flow.CausalMaskedDiffWithDiT
    input_size: 80
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 6561
    input_frame_rate: !ref <token_frame_rate>
    only_mask_loss: True
    token_mel_ratio: !ref <token_mel_ratio>
    pre_lookahead_len: 3
    pre_lookahead_layer: !new:cosyvoice.transformer.upsample_encoder.PreLookaheadLayer
        in_channels: 80
        channels: 32
        pre_lookahead_len: 3
""" + _CFM + """\
        estimator: !new:cosyvoice.flow.DiT.dit.DiT
            dim: 32
            depth: 1
            heads: 2
            dim_head: 16
            ff_mult: 2
            mel_dim: 80
            mu_dim: 80
            spk_dim: 80
            out_channels: 80
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>
"""}

_HIFT = """\
hift: !new:cosyvoice.hifigan.generator.{hift}
    in_channels: 80
    base_channels: 32
    nb_harmonics: 8
    sampling_rate: !ref <sample_rate>
    nsf_alpha: 0.1
    nsf_sigma: 0.003
    nsf_voiced_threshold: 10
    upsample_rates: [8, 5, 3]
    upsample_kernel_sizes: [16, 11, 7]
    istft_params:
        n_fft: 16
        hop_len: 4
    resblock_kernel_sizes: [3, 7, 11]
    resblock_dilation_sizes: [[1, 3, 5], [1, 3, 5], [1, 3, 5]]
    source_resblock_kernel_sizes: [7, 7, 11]
    source_resblock_dilation_sizes: [[1, 3, 5], [1, 3, 5], [1, 3, 5]]
    lrelu_slope: 0.1
    audio_limit: 0.99
{extra}    f0_predictor: !new:cosyvoice.hifigan.f0_predictor.{f0}
        num_class: 1
        in_channels: 80
        cond_channels: 32

feat_extractor: !name:matcha.utils.audio.mel_spectrogram
    n_fft: 1920
    num_mels: 80
    sampling_rate: !ref <sample_rate>
    hop_size: 480
    win_size: 1920
    fmin: 0
    fmax: null
    center: False
"""


def yaml_text(version: int) -> str:
    """Our tiny ``cosyvoice{2,3}.yaml``."""
    names = {2: ("Qwen2LM", "HiFTGenerator", "ConvRNNF0Predictor", ""),
             3: ("CosyVoice3LM", "CausalHiFTGenerator", "CausalConvRNNF0Predictor",
                 "    conv_pre_look_right: 4\n")}
    llm, hift, f0, extra = names[version]
    return "\n".join([_HEAD.format(v=version, llm=llm), _FLOW[version],
                      _HIFT.format(hift=hift, f0=f0, extra=extra)])


def _randomize(module: torch.nn.Module, gen: torch.Generator) -> None:
    """Seeded weights: matrices ~ N(0, 1/fan_in), 1-D parameters off their defaults."""
    with torch.no_grad():
        for param in module.parameters():
            if param.ndim == 1:
                param.add_(0.1 * torch.randn(param.shape, generator=gen))
            else:
                fan_in = max(1, param[0].numel())
                param.copy_(torch.randn(param.shape, generator=gen) / fan_in ** 0.5)


def _quiet_stops(llm: torch.nn.Module) -> None:
    """Zero the decoder head's rows of the stop ids (6561 on): random weights would otherwise
    stop a decode at its first token for some seeds ("no speech tokens"), and the app tests
    need speech for every seed (the OpenAI route draws one)."""
    head = llm.llm_decoder
    with torch.no_grad():
        head.weight[6561:] = 0
        if head.bias is not None:
            head.bias[6561:] = 0


def _modules(folder: Path, version: int) -> dict[str, torch.nn.Module]:
    """Our llm / flow / hift built from the folder's YAML (the LLM with its weights
    initialised: the folder loader skips that, since llm.pt replaces them)."""
    from cosyvoice.runtime.folder import BUILDERS, ModelFolder
    from cosyvoice.runtime.hparams import CosyVoiceHParams
    from cosyvoice.runtime.llm import CosyVoiceLM, qwen_config

    hparams = CosyVoiceHParams.from_file(folder / f"cosyvoice{version}.yaml")
    model = ModelFolder(folder, version, hparams)
    llm = CosyVoiceLM(hparams.llm, qwen_config(folder / "CosyVoice-BlankEN"))
    return {"llm": llm, "flow": BUILDERS["flow"](model), "hift": BUILDERS["hift"](model)}


def write_spk2info(folder: Path, seed: int) -> None:
    """Two preset speakers in the released form: embedding (1, 192), tokens and mel."""
    gen = torch.Generator().manual_seed(seed + 7)
    info = {}
    for name in SPEAKERS:
        info[name] = {"embedding": torch.randn(1, 192, generator=gen),
                      "speech_token": torch.randint(0, 6561, (1, 25), generator=gen,
                                                    dtype=torch.int32),
                      "speech_feat": torch.randn(1, 50, 80, generator=gen)}
    torch.save(info, folder / "spk2info.pt")


def make_folder(out: Path, version: int, seed: int = 0, size: str = "tiny") -> Path:
    """Write the whole tiny folder for ``version`` (2 or 3) into ``out``; returns it.
    ``size="real"`` (CosyVoice3 only): the released sizes (REAL_V3), ≈ 3.4 GB of fp32
    weights, a few minutes of CPU."""
    if version not in (2, 3) or size not in ("tiny", "real") or (size, version) == ("real", 2):
        raise ValueError(f"version must be 2 or 3 and size tiny (or real for 3), not "
                         f"{version}/{size}")
    out.mkdir(parents=True, exist_ok=True)
    text = yaml_text(version)
    if size == "real":
        from bench.make_random_cosyvoice import edit_yaml

        text = edit_yaml(text, REAL_V3)
    (out / f"cosyvoice{version}.yaml").write_text(text, encoding="utf-8")
    write_standins(out, version, QWEN_TINY if size == "tiny" else QWEN_REAL, seed)
    write_spk2info(out, seed)
    gen = torch.Generator().manual_seed(seed)
    for part, module in _modules(out, version).items():
        _randomize(module, gen)
        if part == "llm":
            _quiet_stops(module)
        torch.save(module.state_dict(), out / f"{part}.pt")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--version", type=int, choices=(2, 3), default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", choices=("tiny", "real"), default="tiny")
    args = parser.parse_args()
    folder = make_folder(args.out, args.version, args.seed, args.size)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size:>12,d}  {path.relative_to(folder)}")


if __name__ == "__main__":
    main()
