"""A released CosyVoice2 / Fun-CosyVoice3 model folder: layout checks and strict weight loading.

Layout (as released)::

    cosyvoice2.yaml | cosyvoice3.yaml     hyper-parameters (read as data: hparams.py)
    llm.pt  flow.pt  hift.pt              state dicts (torch.load(weights_only=True))
    campplus.onnx                         speaker embedding (onnx_parts.py)
    speech_tokenizer_v2.onnx | _v3.onnx   speech tokens (onnx_parts.py)
    spk2info.pt                           optional preset voices
    CosyVoice-BlankEN/                    Qwen2 config.json + tokenizer files

Every problem is a :class:`ModelFolderError` naming the file (and tensor) at fault, in English and
Chinese, because it becomes the model's FAILED reason in the UI and API.

Modules are built by the builders in :data:`BUILDERS` (``part -> (hparams, folder) -> nn.Module``).
The LLM's is here; the flow and HiFT modules register theirs with :func:`register_builder`.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from cosyvoice.runtime.hparams import CosyVoiceHParams, HParamsError

logger = logging.getLogger(__name__)

TOKENIZER_DIR = "CosyVoice-BlankEN"
PARTS = ("llm", "flow", "hift")


class ModelFolderError(ValueError):
    """The folder cannot be loaded; the message names the file and what to do."""


def _error(en: str, zh: str) -> ModelFolderError:
    return ModelFolderError(f"{en} / {zh}")


def required_files(version: int) -> list[str]:
    return [f"cosyvoice{version}.yaml", "llm.pt", "flow.pt", "hift.pt", "campplus.onnx",
            f"speech_tokenizer_v{version}.onnx", f"{TOKENIZER_DIR}/config.json"]


@dataclass(frozen=True)
class ModelFolder:
    """A checked folder: its path, version (2 or 3) and hyper-parameters."""

    path: Path
    version: int
    hparams: CosyVoiceHParams

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def speech_tokenizer(self) -> Path:
        return self.path / f"speech_tokenizer_v{self.version}.onnx"

    @property
    def spk2info(self) -> Path | None:
        path = self.path / "spk2info.pt"
        return path if path.exists() else None


def check_folder(path: str | Path, version: int) -> ModelFolder:
    """Check the layout for CosyVoice ``version`` (2 or 3) and read its YAML (in a child
    process: hparams.CosyVoiceHParams.from_file)."""
    path = Path(path)
    if not path.is_dir():
        raise _error(f"model folder {path} does not exist", f"模型目录 {path} 不存在")
    other = 5 - version
    if not (path / f"cosyvoice{version}.yaml").exists() and (
            path / f"cosyvoice{other}.yaml").exists():
        raise _error(
            f"{path.name} is a CosyVoice{other} folder (it has cosyvoice{other}.yaml); "
            f"load it as cosyvoice{other}",
            f"{path.name} 是 CosyVoice{other} 模型目录（含 cosyvoice{other}.yaml），"
            f"请按 cosyvoice{other} 加载")
    missing = [name for name in required_files(version) if not (path / name).exists()]
    if missing:
        raise _error(f"model folder {path} is missing {', '.join(missing)}",
                     f"模型目录 {path} 缺少文件：{', '.join(missing)}")
    odd = not_regular(path, version)
    if odd:
        one = len(odd) == 1
        raise _error(f"in model folder {path}, {', '.join(odd)} "
                     f"{'is not a regular file' if one else 'are not regular files'} (a "
                     f"directory, FIFO, device or socket); {'it is' if one else 'they are'} not "
                     "read. Use the released files",
                     f"模型目录 {path} 中 {', '.join(odd)} 不是普通文件"
                     "（目录、FIFO、设备或套接字），不予读取；请使用官方发布的文件")
    try:
        hparams = CosyVoiceHParams.from_file(path / f"cosyvoice{version}.yaml")
    except HParamsError as e:
        raise _error(f"cannot read {e}", f"无法读取 {e}") from e
    if hparams.version != version:
        raise _error(
            f"cosyvoice{version}.yaml describes a CosyVoice{hparams.version} LLM "
            f"({hparams.section('llm').class_name})",
            f"cosyvoice{version}.yaml 描述的是 CosyVoice{hparams.version} 的 LLM")
    return ModelFolder(path=path, version=version, hparams=hparams)


def not_regular(path: Path, version: int) -> list[str]:
    """The files the runtime reads (the required ones, ``spk2info.pt``, the tokenizer
    folder's) that are there but are not regular files (a link to one is fine): opening a FIFO
    would block the load for ever, reading a link to ``/dev/zero`` would never end (the
    released tokenizer folder holds files only)."""
    named = [*required_files(version), "spk2info.pt"]
    tokenizer = path / TOKENIZER_DIR
    listed = sorted(f"{TOKENIZER_DIR}/{p.name}" for p in tokenizer.iterdir()) if (
        tokenizer.is_dir()) else []
    odd = []
    for name in dict.fromkeys([*named, *listed]):
        try:
            mode = os.stat(path / name).st_mode
        except OSError:
            continue  # absent (an optional file): nothing is read
        if not stat.S_ISREG(mode):
            odd.append(name)
    return odd


def load_tensors(path: Path, fix: str = "download it again",
                 fix_zh: str = "请重新下载") -> object:
    """``torch.load(weights_only=True)``, its errors a :class:`ModelFolderError` naming the
    file and ``fix``. PyTorch's own text is logged, not passed on: it advises loading the file
    with ``weights_only=False``, which could run code from it."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        logger.warning("%s: %s", path, e)
        found = re.search(r"GLOBAL ([\w.]+)", str(e))
        if found:
            raise _error(f"{path.name} holds objects other than tensors ({found.group(1)}); "
                         f"it is not loaded, since loading it could run code. Use the released "
                         f"file", f"{path.name} 含有张量以外的对象（{found.group(1)}），加载可能"
                         f"执行代码，因此不予加载；请使用官方发布的文件") from None
        raise _error(f"{path.name} is damaged or not a PyTorch file; {fix}",
                     f"{path.name} 已损坏或不是 PyTorch 文件，{fix_zh}") from None
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError) as e:
        logger.warning("%s: %s", path, e)
        raise _error(f"{path.name} is truncated or not a PyTorch file; {fix}",
                     f"{path.name} 文件不完整或不是 PyTorch 文件，{fix_zh}") from None


def load_state(path: Path) -> dict[str, torch.Tensor]:
    """A state dict of tensors (:func:`load_tensors`) with errors that name the file."""
    state = load_tensors(path)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor)
                                              for v in state.values()):
        raise _error(f"{path.name} is not a state dict of tensors",
                     f"{path.name} 不是张量权重字典")
    return state


def load_strict(module: nn.Module, state: dict[str, torch.Tensor], filename: str) -> None:
    """Strict ``load_state_dict``: a missing, unexpected or mis-shaped tensor is named."""
    check_fits(module, state, filename)
    module.load_state_dict(state, strict=True)


def check_fits(module: nn.Module, state: dict[str, torch.Tensor], filename: str) -> None:
    """Every tensor of ``module`` (built for real or on the meta device) is in ``state`` with
    its shape, and nothing else is: otherwise the first missing, unexpected or mis-shaped
    tensors are named."""
    own = module.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
        if unexpected:
            parts.append(f"unexpected {', '.join(unexpected[:5])}"
                         f"{' …' if len(unexpected) > 5 else ''}")
        raise _error(f"{filename} does not fit this model: {'; '.join(parts)}",
                     f"{filename} 与模型结构不符：{'; '.join(parts)}")
    for key, value in own.items():
        if tuple(state[key].shape) != tuple(value.shape):
            raise _error(f"{filename}: tensor {key} has shape {tuple(state[key].shape)}, "
                         f"the YAML's model needs {tuple(value.shape)}",
                         f"{filename}：张量 {key} 形状为 {tuple(state[key].shape)}，"
                         f"而 YAML 描述的模型需要 {tuple(value.shape)}")


Builder = Callable[[ModelFolder], nn.Module]
BUILDERS: dict[str, Builder] = {}


def register_builder(part: str, builder: Builder) -> None:
    """Make ``load_part(folder, part)`` build ``part`` with ``builder(folder)``."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}; parts are {PARTS}")
    BUILDERS[part] = builder


def _build_llm(folder: ModelFolder) -> nn.Module:
    from cosyvoice.runtime.llm import CosyVoiceLM, qwen_config

    try:
        qwen = qwen_config(folder.path / TOKENIZER_DIR)
    except (OSError, ValueError, TypeError) as e:
        raise _error(f"{TOKENIZER_DIR}/config.json cannot be read: {e}",
                     f"无法读取 {TOKENIZER_DIR}/config.json：{e}") from e
    from transformers.initialization import no_init_weights

    # Every parameter is replaced by llm.pt: skip the random initialisation of 0.5 B weights
    # (≈ 5 CPU-seconds), then re-tie Qwen's LM head to its embedding as the config says.
    with no_init_weights():
        model = CosyVoiceLM(folder.hparams.llm, qwen)
    if qwen.tie_word_embeddings:
        model.llm.model.tie_weights()
    return model


register_builder("llm", _build_llm)


def _build_flow(folder: ModelFolder) -> nn.Module:
    from cosyvoice.runtime.flow import FlowConfig, build_flow

    return _built(folder, "flow", lambda node: build_flow(FlowConfig.from_tagged(node)))


def _build_hift(folder: ModelFolder) -> nn.Module:
    from cosyvoice.runtime.flow import FlowConfig
    from cosyvoice.runtime.hift import HiFTConfig, build_hift

    flow = _built(folder, "flow", FlowConfig.from_tagged)  # sizes v3's causal noise replay
    return _built(folder, "hift", lambda node: build_hift(HiFTConfig.from_tagged(node), flow))


def _built(folder: ModelFolder, part: str, build: Callable[[object], Any]) -> Any:
    """``build`` the part from its YAML section; a section we cannot build names the YAML."""
    name = f"cosyvoice{folder.version}.yaml"
    try:
        return build(folder.hparams.section(part))
    except ValueError as e:
        raise _error(f"{name}: the '{part}' section cannot be built: {e}",
                     f"{name}：无法构建 '{part}' 部分：{e}") from e


register_builder("flow", _build_flow)
register_builder("hift", _build_hift)


def state_for(part: str, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Released key quirks: a ``hift.pt`` saved from the GAN wrapper has a ``generator.`` prefix."""
    if part == "hift":
        return {k.replace("generator.", ""): v for k, v in state.items()}
    return state


def load_part(folder: ModelFolder, part: str) -> nn.Module:
    """Build ``part`` (llm / flow / hift) from the YAML and load ``<part>.pt`` into it, strictly.
    The YAML's sizes are checked against the weights on the meta device first, so a YAML that
    asks for far more than the file holds (``dim: 100000``) is refused before the real build
    allocates and initialises it."""
    if part not in BUILDERS:
        raise NotImplementedError(f"no builder registered for {part!r}")
    filename = f"{part}.pt"
    state = state_for(part, load_state(folder.path / filename))
    shapes = _on_meta(folder, part)
    if shapes is not None:
        check_fits(shapes, state, filename)
    del shapes
    module = BUILDERS[part](folder)
    load_strict(module, state, filename)
    logger.info("loaded %s from %s", filename, folder.path)
    return module.eval()


def _on_meta(folder: ModelFolder, part: str) -> nn.Module | None:
    """``part`` built on the meta device: its tensors' shapes, no memory. None (logged) where
    a module cannot be built there; the real build's strict load still checks the shapes."""
    try:
        with torch.device("meta"):
            return BUILDERS[part](folder)
    except ModelFolderError:
        raise
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
        logger.warning("%s: no shape check before the build (%s)", part, e)
        return None
