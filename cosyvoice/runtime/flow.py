"""The flow model: speech tokens + prompt mel + speaker vector -> mel spectrogram.

CosyVoice2 (``CausalMaskedDiffWithXvec``) encodes tokens with the upsampling conformer and
solves the flow with the causal U-Net; Fun-CosyVoice3 (``CausalMaskedDiffWithDiT``) only
runs the pre-lookahead convolution, repeats each token twice and solves with the DiT.
``state_dict`` keys and shapes equal the released ``flow.pt``.

Streaming follows the reference: the caller passes all tokens so far; with
``finalize=False`` the last ``pre_lookahead_len`` tokens only serve as look-ahead context
and produce no mel yet, and ``streaming=True`` makes every attention chunk-causal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.runtime.flow_dit import DiTEstimator
from cosyvoice.runtime.flow_encoder import PreLookaheadLayer, UpsampleConformerEncoder
from cosyvoice.runtime.flow_masks import length_mask
from cosyvoice.runtime.flow_matching import FlowSolver
from cosyvoice.runtime.flow_unet import UNetEstimator
from cosyvoice.runtime.node_args import kwargs_of


@dataclass
class FlowConfig:
    """Hyper-parameters of the flow model, named as in the released YAML's ``flow:`` block."""

    version: int = 2
    vocab_size: int = 6561
    input_size: int = 512
    output_size: int = 80
    spk_embed_dim: int = 192
    token_mel_ratio: int = 2
    pre_lookahead_len: int = 3
    chunk_size: int = 25
    cfg_rate: float = 0.7
    t_scheduler: str = "cosine"
    n_timesteps: int = 10
    encoder: dict[str, Any] = field(default_factory=dict)
    lookahead_channels: int = 1024
    estimator: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_tagged(cls, node: Any) -> FlowConfig:
        """Read the YAML's ``flow: !new:...`` node as data (see ``hparams``): the class name
        picks v2 or v3, the arguments fill the fields; nested nodes are read the same way."""
        versions = {"CausalMaskedDiffWithXvec": 2, "CausalMaskedDiffWithDiT": 3}
        name = getattr(node, "class_name", None)
        if name not in versions:
            raise ValueError(f"flow is {getattr(node, 'target', name)!r}; this runtime builds "
                             "CausalMaskedDiffWithXvec (CosyVoice2) or CausalMaskedDiffWithDiT "
                             "(CosyVoice3)")
        version, flow = versions[name], kwargs_of(node)
        decoder = kwargs_of(flow.get("decoder"))
        cfm = kwargs_of(decoder.get("cfm_params"))
        cfm = kwargs_of(cfm.get("content", cfm))
        estimator = kwargs_of(decoder.get("estimator"))
        encoder = kwargs_of(flow.get("encoder"))
        ratio = int(flow.get("token_mel_ratio", 2))
        if version == 2:
            chunk = int(encoder.get("static_chunk_size", 25))
        else:
            chunk = int(estimator.get("static_chunk_size", 50)) // ratio
        return cls(
            version=version,
            vocab_size=int(flow.get("vocab_size", 6561)),
            input_size=int(flow.get("input_size", 512 if version == 2 else 80)),
            output_size=int(flow.get("output_size", 80)),
            spk_embed_dim=int(flow.get("spk_embed_dim", 192)),
            token_mel_ratio=ratio,
            pre_lookahead_len=int(flow.get("pre_lookahead_len", 3)),
            chunk_size=chunk,
            cfg_rate=float(cfm.get("inference_cfg_rate", 0.7)),
            t_scheduler=str(cfm.get("t_scheduler", "cosine")),
            encoder=encoder,
            lookahead_channels=int(
                kwargs_of(flow.get("pre_lookahead_layer")).get("channels", 1024)),
            estimator=estimator,
        )


def build_estimator(config: FlowConfig) -> nn.Module:
    """The U-Net (v2) or DiT (v3) from the YAML's ``estimator:`` arguments."""
    e = config.estimator
    chunk = config.chunk_size * config.token_mel_ratio
    if config.version == 2:
        return UNetEstimator(
            in_channels=int(e.get("in_channels", 320)), out_channels=int(e.get("out_channels", 80)),
            channels=tuple(e.get("channels", (256,))), n_blocks=int(e.get("n_blocks", 4)),
            num_mid_blocks=int(e.get("num_mid_blocks", 12)), num_heads=int(e.get("num_heads", 8)),
            attention_head_dim=int(e.get("attention_head_dim", 64)), chunk=chunk)
    return DiTEstimator(
        dim=int(e.get("dim", 1024)), depth=int(e.get("depth", 22)), heads=int(e.get("heads", 16)),
        dim_head=int(e.get("dim_head", 64)), ff_mult=int(e.get("ff_mult", 2)),
        mel_dim=int(e.get("mel_dim", 80)), mu_dim=int(e.get("mu_dim", 80)),
        spk_dim=int(e.get("spk_dim", 80)), chunk=chunk)


class CausalFlow(nn.Module):
    """Shared parts of the v2 and v3 flow models; ``encode`` differs."""

    def __init__(self, config: FlowConfig) -> None:
        super().__init__()
        self.config = config
        self.input_embedding = nn.Embedding(config.vocab_size, config.input_size)
        self.spk_embed_affine_layer = nn.Linear(config.spk_embed_dim, config.output_size)
        self.decoder = FlowSolver(build_estimator(config), config.cfg_rate, config.t_scheduler,
                                  config.output_size)

    def encode(self, tokens: torch.Tensor, lengths: torch.Tensor, context: torch.Tensor | None,
               streaming: bool) -> torch.Tensor:
        """Embedded tokens (1, T, D) -> conditioning ``mu`` (1, T·ratio, 80)."""
        raise NotImplementedError

    @torch.inference_mode()
    def inference(self, token: torch.Tensor, token_len: torch.Tensor,
                  prompt_token: torch.Tensor, prompt_token_len: torch.Tensor,
                  prompt_feat: torch.Tensor, embedding: torch.Tensor,
                  streaming: bool = False, finalize: bool = True) -> torch.Tensor:
        """Mel (1, 80, T_new) for the new tokens.

        token (1, T) and prompt_token (1, P) are speech token ids; prompt_feat (1, 2P, 80) the
        prompt's mel; embedding (1, 192) the speaker vector (normalized here).
        """
        if token.size(0) != 1:
            raise ValueError("the flow model synthesizes one utterance at a time; "
                             f"got a batch of {token.size(0)}")
        lookahead = self.config.pre_lookahead_len
        if not finalize and token.size(1) + prompt_token.size(1) <= lookahead:
            raise ValueError(f"a streamed flow chunk needs more than {lookahead} tokens")
        spks = self.spk_embed_affine_layer(F.normalize(embedding, dim=1))
        tokens = torch.cat([prompt_token, token], dim=1)
        lengths = prompt_token_len + token_len
        valid = length_mask(lengths, tokens.size(1)).unsqueeze(-1).to(spks)
        emb = self.input_embedding(torch.clamp(tokens, min=0)) * valid
        context = None
        if not finalize:
            emb, context = emb[:, :-lookahead], emb[:, -lookahead:]
        mu = self.encode(emb, lengths, context, streaming)
        prompt_frames = prompt_feat.size(1)
        frames = mu.size(1)
        cond = torch.zeros([1, frames, self.config.output_size], device=mu.device, dtype=mu.dtype)
        cond[:, :prompt_frames] = prompt_feat
        mask = torch.ones(1, 1, frames, device=mu.device, dtype=mu.dtype)
        mel = self.decoder(mu.transpose(1, 2).contiguous(), mask, spks, cond.transpose(1, 2),
                           steps=self.config.n_timesteps, streaming=streaming)
        return mel[:, :, prompt_frames:].float()


class FlowV2(CausalFlow):
    """CosyVoice2: upsampling conformer encoder, projection to 80, causal U-Net."""

    def __init__(self, config: FlowConfig) -> None:
        super().__init__(config)
        e = config.encoder
        dim = int(e.get("output_size", 512))
        if dim != config.input_size or int(e.get("input_size", dim)) != dim:
            raise ValueError(f"the v2 flow encoder needs input_size == output_size; got "
                             f"{config.input_size} and {dim}")
        self.encoder = UpsampleConformerEncoder(
            dim=dim, heads=int(e.get("attention_heads", 8)),
            hidden=int(e.get("linear_units", 2048)), blocks=int(e.get("num_blocks", 6)),
            lookahead=config.pre_lookahead_len,
            chunk=config.chunk_size)
        self.encoder_proj = nn.Linear(dim, config.output_size)

    def encode(self, tokens: torch.Tensor, lengths: torch.Tensor, context: torch.Tensor | None,
               streaming: bool) -> torch.Tensor:
        hidden, _ = self.encoder(tokens, lengths, context, streaming)
        return self.encoder_proj(hidden)


class FlowV3(CausalFlow):
    """Fun-CosyVoice3: pre-lookahead convolution, ×ratio repetition, DiT."""

    def __init__(self, config: FlowConfig) -> None:
        super().__init__(config)
        self.pre_lookahead_layer = PreLookaheadLayer(config.input_size, config.lookahead_channels,
                                                     config.pre_lookahead_len)

    def encode(self, tokens: torch.Tensor, lengths: torch.Tensor, context: torch.Tensor | None,
               streaming: bool) -> torch.Tensor:
        hidden = self.pre_lookahead_layer(tokens, context)
        return hidden.repeat_interleave(self.config.token_mel_ratio, dim=1)


def build_flow(config: FlowConfig) -> CausalFlow:
    """The v2 or v3 flow model for ``config`` (random weights until a state dict is loaded)."""
    return FlowV2(config) if config.version == 2 else FlowV3(config)
