"""CosyVoice's released ``cosyvoice2.yaml`` / ``cosyvoice3.yaml`` as typed configs.

The YAML is read as plain data by yaml_data.py (HyperPyYAML tags kept as :class:`Tagged`
values, never executed; ``!ref`` resolved; every evaluation bounded); a model folder's file is
read in a short-lived child process (yaml_child.py). Here the parts we build are read from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cosyvoice.runtime.yaml_child import read_yaml
from cosyvoice.runtime.yaml_data import HParamsError, Tagged, load_yaml

__all__ = ["CosyVoiceHParams", "HParamsError", "LLMConfig", "SamplingConfig", "Tagged",
           "load_yaml"]


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
        except (TypeError, ValueError, OverflowError) as e:
            raise HParamsError(f"llm: a size is not a number: {e}") from e


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
        """From YAML text, read in this process (within yaml_data's bounds)."""
        return cls.from_doc(load_yaml(text))

    @classmethod
    def from_doc(cls, doc: dict) -> CosyVoiceHParams:
        """From the YAML's data (yaml_data.load_yaml's)."""
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
        except (TypeError, ValueError, OverflowError) as e:
            raise HParamsError(f"a top-level size is not a number: {e}") from e

    @classmethod
    def from_file(cls, path: str | Path) -> CosyVoiceHParams:
        """From a model folder's YAML file, evaluated in a child process (yaml_child.py):
        whatever the file holds, this process only waits, up to a timeout."""
        path = Path(path)
        try:
            return cls.from_doc(read_yaml(path))
        except HParamsError as e:
            raise HParamsError(f"{path.name}: {e}") from e
