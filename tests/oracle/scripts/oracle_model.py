"""Build the reference's model from a folder, as its CosyVoice2/CosyVoice3 classes do.

Runs inside the oracle's interpreter only. ``load_hyperpyyaml`` with ``qwen_pretrain_path`` set to
the folder's ``CosyVoice-BlankEN``; the reference then loads ``llm.pt``/``flow.pt``/``hift.pt`` with
strict ``load_state_dict``. One change, for folders without Qwen weights: the reference's
``Qwen2ForCausalLM.from_pretrained`` is given the Qwen2 config's randomly initialised model (its
weights are replaced by ``llm.pt`` anyway).
"""

from __future__ import annotations

import os

import cosyvoice.llm.llm as ref_llm
import torch
from hyperpyyaml import load_hyperpyyaml
from transformers import Qwen2Config, Qwen2ForCausalLM


class _ConfigOnlyQwen2(Qwen2ForCausalLM):
    @classmethod
    def from_pretrained(cls, path, *args, **kwargs):
        return Qwen2ForCausalLM(Qwen2Config.from_pretrained(path))


def yaml_name(folder: str) -> str:
    for name in ("cosyvoice3.yaml", "cosyvoice2.yaml"):
        if os.path.exists(os.path.join(folder, name)):
            return name
    raise FileNotFoundError(f"no cosyvoice2.yaml/cosyvoice3.yaml in {folder}")


def _drop_sections(text: str, names) -> str:
    """The YAML text without the top-level blocks ``names`` (so they are not built)."""
    out, skipping = [], False
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            skipping = line.split(":", 1)[0] in names
        if not skipping:
            out.append(line)
    return "\n".join(out) + "\n"


def load_configs(folder: str, parts=("llm", "flow", "hift")) -> dict:
    """The YAML built by hyperpyyaml (training-only GAN sections cut, and the model parts not in
    ``parts``), modules freshly initialised."""
    ref_llm.Qwen2ForCausalLM = _ConfigOnlyQwen2
    with open(os.path.join(folder, yaml_name(folder))) as f:
        text = f.read()
    text = _drop_sections(text.split("# gan related module")[0],
                          [p for p in ("llm", "flow", "hift") if p not in parts])
    return load_hyperpyyaml(text, overrides={
        "qwen_pretrain_path": os.path.join(folder, "CosyVoice-BlankEN")})


def load_parts(folder: str, parts=("llm", "flow", "hift")) -> dict:
    """The reference's modules with the folder's weights loaded (strict), in eval mode."""
    configs = load_configs(folder, parts)
    out = {}
    for part in parts:
        path = os.path.join(folder, f"{part}.pt")
        state = torch.load(path, map_location="cpu", weights_only=True)
        if part == "hift":
            state = {k.replace("generator.", ""): v for k, v in state.items()}
        module = configs[part]
        module.load_state_dict(state, strict=True)
        out[part] = module.eval()
    return out
