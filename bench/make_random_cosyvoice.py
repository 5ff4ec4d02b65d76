"""Write a CosyVoice2/CosyVoice3 model folder in the released layout, with random weights.

    PYTHONPATH=. .venv/bin/python bench/make_random_cosyvoice.py --version 3 --size tiny OUT_DIR

The folder holds what a released one holds — ``cosyvoice{2,3}.yaml``, ``llm.pt``, ``flow.pt``,
``hift.pt``, ``campplus.onnx``, ``speech_tokenizer_v{2,3}.onnx``, ``spk2info.pt`` and
``CosyVoice-BlankEN/`` — so that our runtime and the reference (the test oracle) can load the very
same weights. The YAML is the reference's example config (``--size real``: the released sizes) or a
tiny variant of it (``--size tiny``: the same structure, small widths, for CI). The ``.pt`` state
dicts are made by the reference's own modules in the oracle's environment (tests/oracle), so their
keys and shapes are the released ones. The ONNX files and the tokenizer are stand-ins
(``bench/cosyvoice_standins.py``): real folders carry the real ones.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.cosyvoice_standins import QWEN_REAL, QWEN_TINY, write_standins  # noqa: E402
from tests.oracle.harness import oracle_dir, run_oracle  # noqa: E402

# Tiny widths, by YAML key path; the structure (and every released-fixed size: 80 mels, 192-d
# speaker embedding, 6561 speech tokens, 24 kHz, upsample rates) is kept.
TINY_EDITS = {
    "llm_input_size": 32, "llm_output_size": 32,
    # the v2 flow encoder stays 512 wide: the reference hard-codes 512 in its look-ahead and
    # upsampling layers, so a narrower one builds but cannot run there
    "flow.encoder.attention_heads": 2, "flow.encoder.linear_units": 64,
    "flow.encoder.num_blocks": 2,
    "flow.pre_lookahead_layer.channels": 32,
    "flow.decoder.estimator.channels": "[32]", "flow.decoder.estimator.attention_head_dim": 16,
    "flow.decoder.estimator.n_blocks": 1, "flow.decoder.estimator.num_mid_blocks": 2,
    "flow.decoder.estimator.num_heads": 2,
    "flow.decoder.estimator.dim": 32, "flow.decoder.estimator.depth": 2,
    "flow.decoder.estimator.heads": 2, "flow.decoder.estimator.dim_head": 16,
    "hift.base_channels": 32, "hift.f0_predictor.cond_channels": 32,
}
_LINE = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*):(\s*)(.*)$")


def edit_yaml(text: str, edits: dict[str, object]) -> str:
    """Replace scalars by key path (``flow.encoder.num_blocks``), keeping tags and comments."""
    stack: list[tuple[int, str]] = []
    done, out = set(), []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            indent = len(match.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = ".".join([k for _, k in stack] + [match.group(2)])
            stack.append((indent, match.group(2)))
            if path in edits:
                value = match.group(4)
                comment = value[value.index(" #"):] if " #" in value else ""
                line = f"{match.group(1)}{match.group(2)}: {edits[path]}{comment}"
                done.add(path)
        out.append(line)
    return "\n".join(out) + "\n"


def config_text(version: int, size: str) -> str:
    base = oracle_dir()
    if base is None:
        raise SystemExit("the reference's configs (shared/oracles/cosyvoice) are not found")
    text = (base / "configs" / f"cosyvoice{version}.yaml").read_text(encoding="utf-8")
    return edit_yaml(text, TINY_EDITS) if size == "tiny" else text


def write_spk2info(folder: Path, version: int, size: str, seed: int) -> None:
    """One preset voice in the released form: embedding (1, 192), prompt tokens and mel."""
    gen = torch.Generator().manual_seed(seed + 7)
    tokens = torch.randint(0, 6561, (1, 50), generator=gen, dtype=torch.int32)
    info = {"embedding": torch.randn(1, 192, generator=gen),
            "speech_token": tokens,
            "speech_feat": torch.randn(1, 100, 80, generator=gen)}
    torch.save({"random-voice": info}, folder / "spk2info.pt")


def make_folder(out: Path, version: int, size: str = "tiny", seed: int = 0) -> Path:
    """Write the whole folder; returns it. The weights come from the oracle (tests/oracle)."""
    if version not in (2, 3) or size not in ("tiny", "real"):
        raise ValueError(f"version must be 2 or 3 and size tiny or real, not {version}/{size}")
    out = out.resolve()  # the oracle runs in another working directory
    out.mkdir(parents=True, exist_ok=True)
    (out / f"cosyvoice{version}.yaml").write_text(config_text(version, size), encoding="utf-8")
    write_standins(out, version, QWEN_TINY if size == "tiny" else QWEN_REAL, seed)
    write_spk2info(out, version, size, seed)
    run_oracle("make_weights.py", folder=str(out), seed=seed, timeout=3600)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--version", type=int, choices=(2, 3), default=2)
    parser.add_argument("--size", choices=("tiny", "real"), default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = make_folder(args.out, args.version, args.size, args.seed)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size:>12,d}  {path.relative_to(folder)}")


if __name__ == "__main__":
    main()
