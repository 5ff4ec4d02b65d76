"""CosyVoice's released ``cosyvoice2.yaml`` / ``cosyvoice3.yaml`` read as data.

The released files are HyperPyYAML: ``!new:pkg.Class`` (build an object), ``!name:pkg.fn`` (a
partial), ``!apply:pkg.fn`` (call at load time) and ``!ref <key>`` (a reference, sometimes with
arithmetic such as ``<chunk_size> * <token_mel_ratio>``). We never import or call what they name:
a ``SafeLoader`` subclass turns each tagged node into a :class:`Tagged` value (target + arguments),
``!ref`` is resolved against the document, and typed configs are read from the parts we build.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class HParamsError(ValueError):
    """The YAML cannot be read as a CosyVoice hyper-parameter file (the message names why)."""


@dataclass
class Tagged:
    """A ``!new:``/``!name:``/``!apply:`` node: what it names and its arguments, never executed."""

    kind: str  # "new" | "name" | "apply"
    target: str  # dotted name, e.g. "cosyvoice.llm.llm.Qwen2LM"
    kwargs: dict[str, Any] = field(default_factory=dict)
    args: list[Any] = field(default_factory=list)

    @property
    def class_name(self) -> str:
        return self.target.rsplit(".", 1)[-1]


@dataclass
class _Ref:
    expr: str


class _DataLoader(yaml.SafeLoader):
    """SafeLoader that keeps HyperPyYAML tags as data."""


def _tagged(kind: str):
    def construct(loader: _DataLoader, suffix: str, node: yaml.Node) -> Tagged:
        if isinstance(node, yaml.MappingNode):
            return Tagged(kind, suffix, kwargs=loader.construct_mapping(node, deep=True))
        if isinstance(node, yaml.SequenceNode):
            return Tagged(kind, suffix, args=loader.construct_sequence(node, deep=True))
        value = loader.construct_scalar(node)
        return Tagged(kind, suffix, args=[value] if value not in ("", None) else [])
    return construct


for _kind in ("new", "name", "apply"):
    _DataLoader.add_multi_constructor(f"!{_kind}:", _tagged(_kind))
# YAML 1.2 floats without a dot ("1e-06"), which HyperPyYAML's ruamel reads as numbers.
_DataLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))
_DataLoader.add_constructor("!ref", lambda loader, node: _Ref(loader.construct_scalar(node)))

_REF = re.compile(r"<([^<>]+)>")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _arith(node: ast.AST) -> Any:
    """Evaluate numbers and + - * / // % ** only (what ``!ref`` expressions use)."""
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arith(node.left), _arith(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arith(node.operand))
    raise HParamsError(f"unsupported expression in !ref: {ast.dump(node)}")


class _Resolver:
    def __init__(self, doc: dict):
        self.doc = doc
        self.active: set[str] = set()

    def lookup(self, key: str) -> Any:
        if key in self.active:
            raise HParamsError(f"!ref <{key}> refers to itself")
        node: Any = self.doc
        for part in re.split(r"[.\[\]]+", key.strip()):
            if not part:
                continue
            if not isinstance(node, dict) or part not in node:
                raise HParamsError(f"!ref <{key}>: no such key in the YAML")
            node = node[part]
        self.active.add(key)
        try:
            return self.resolve(node)
        finally:
            self.active.discard(key)

    def resolve(self, node: Any) -> Any:
        if isinstance(node, _Ref):
            return self.ref(node.expr)
        if isinstance(node, Tagged):
            return Tagged(node.kind, node.target, self.resolve(node.kwargs),
                          self.resolve(node.args))
        if isinstance(node, dict):
            return {k: self.resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self.resolve(v) for v in node]
        return node

    def ref(self, expr: str) -> Any:
        whole = _REF.fullmatch(expr.strip())
        if whole:
            return self.lookup(whole.group(1))
        values = {}

        def name(match: re.Match) -> str:
            values[f"_r{len(values)}"] = self.lookup(match.group(1))
            return f"_r{len(values) - 1}"

        text = _REF.sub(name, expr)
        for key, value in values.items():
            text = text.replace(key, repr(value))
        try:
            return _arith(ast.parse(text, mode="eval"))
        except SyntaxError as e:
            raise HParamsError(f"cannot read !ref {expr!r}") from e


def load_yaml(text: str) -> dict:
    """The document as plain data: tags → :class:`Tagged`, every ``!ref`` resolved."""
    try:
        doc = yaml.load(text, Loader=_DataLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as e:
        raise HParamsError(f"not a readable YAML file: {e}") from e
    if not isinstance(doc, dict):
        raise HParamsError("the YAML's top level is not a mapping")
    return _Resolver(doc).resolve(doc)


@dataclass(frozen=True)
class SamplingConfig:
    """Repetition-aware sampling (``ras_sampling``'s arguments in the YAML)."""

    top_p: float = 0.8
    top_k: int = 25
    win_size: int = 10
    tau_r: float = 0.1


@dataclass(frozen=True)
class LLMConfig:
    """The speech-token LM: ``Qwen2LM`` (CosyVoice2) or ``CosyVoice3LM``."""

    version: int  # 2 or 3
    llm_input_size: int
    llm_output_size: int
    speech_token_size: int
    sampling: SamplingConfig

    @classmethod
    def from_tagged(cls, node: Tagged) -> LLMConfig:
        versions = {"Qwen2LM": 2, "CosyVoice3LM": 3}
        if node.class_name not in versions:
            raise HParamsError(f"llm is {node.target}; expected Qwen2LM or CosyVoice3LM")
        kw = node.kwargs
        sampling = kw.get("sampling")
        fields = SamplingConfig.__dataclass_fields__
        sampling_kw = {k: v for k, v in sampling.kwargs.items() if k in fields} if isinstance(
            sampling, Tagged) else {}
        try:
            return cls(version=versions[node.class_name],
                       llm_input_size=int(kw["llm_input_size"]),
                       llm_output_size=int(kw["llm_output_size"]),
                       speech_token_size=int(kw["speech_token_size"]),
                       sampling=SamplingConfig(**sampling_kw))
        except KeyError as e:
            raise HParamsError(f"llm: missing hyper-parameter {e.args[0]!r}") from e


@dataclass(frozen=True)
class CosyVoiceHParams:
    """What our runtime reads from the YAML; ``doc`` keeps everything for the flow/HiFT builders."""

    version: int
    sample_rate: int
    token_frame_rate: int
    token_mel_ratio: int
    chunk_size: int
    llm: LLMConfig
    doc: dict

    def section(self, name: str) -> Tagged:
        node = self.doc.get(name)
        if not isinstance(node, Tagged):
            raise HParamsError(f"the YAML has no '{name}: !new:...' section")
        return node

    @classmethod
    def from_text(cls, text: str) -> CosyVoiceHParams:
        doc = load_yaml(text)
        if not isinstance(doc.get("llm"), Tagged):
            raise HParamsError("the YAML has no 'llm: !new:...' section")
        llm = LLMConfig.from_tagged(doc["llm"])
        try:
            return cls(version=llm.version, sample_rate=int(doc["sample_rate"]),
                       token_frame_rate=int(doc["token_frame_rate"]),
                       token_mel_ratio=int(doc["token_mel_ratio"]),
                       chunk_size=int(doc.get("chunk_size", 25)), llm=llm, doc=doc)
        except KeyError as e:
            raise HParamsError(f"missing hyper-parameter {e.args[0]!r}") from e

    @classmethod
    def from_file(cls, path: str | Path) -> CosyVoiceHParams:
        path = Path(path)
        try:
            return cls.from_text(path.read_text(encoding="utf-8"))
        except HParamsError as e:
            raise HParamsError(f"{path.name}: {e}") from e
