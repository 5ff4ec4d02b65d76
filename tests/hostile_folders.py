"""Hostile CosyVoice model folders: the bad-input catalogue of what a folder's YAML can hold.

Each variant is a tiny, otherwise valid folder (tests/cosyvoice_folder.py) whose
``cosyvoice3.yaml`` is replaced by something that, read naively, freezes the process (big-int
arithmetic holds the GIL), eats its memory, blows its stack or blocks a read for ever. Used by
tests/runtime/test_hostile_yaml.py (the reader's bounds), tests/server/test_bad_model_folders.py
(the real app stays live while it loads one) and bench/hostile_folder.py (the freeze, before and
after the fix).

``VARIANTS``: name -> (what the YAML is, words the FAILED reason must hold). The words are
lower-case fragments of our own messages, so a reason that only quotes a library's crash
(RecursionError, OverflowError, ...) does not pass.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.cosyvoice_folder import yaml_text

YAML = "cosyvoice3.yaml"
MB = 2**20


def _tower(levels: int, width: int, item: str = "lol") -> str:
    """Nested aliases ("billion laughs"): ``width ** levels`` nodes once expanded."""
    lines = [f"l0: &l0 [{', '.join([item] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _ref_tower(levels: int, width: int) -> str:
    """The same growth through ``!ref`` (each reference is a copy when resolved)."""
    lines = [f"r0: [{', '.join(['1'] * width)}]"]
    lines += [f"r{i}: [{', '.join([f'!ref <r{i - 1}>'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _nested_block(depth: int) -> str:
    return "".join(f"{'  ' * i}k{i}:\n" for i in range(depth)) + f"{'  ' * depth}leaf: 1\n"


def _ref_chain(length: int) -> str:
    return "c0: 1\n" + "".join(f"c{i}: !ref <c{i - 1}>\n" for i in range(1, length))


# name -> (extra YAML appended to the valid tiny one, words of the reason)
TEXT_VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "power_tower": ("boom: !ref 9 ** 9 ** 9\n", ("line", "boom", "exponent")),
    "power_by_ref": ("n: 9\nboom: !ref <n> ** <n> ** <n>\n", ("boom", "exponent")),
    "power_huge_base": ("boom: !ref 123456789 ** 100\n", ("boom", "bits")),
    "shift_huge": ("boom: !ref 1 << 10 ** 10\n", ("boom", "lshift is not allowed")),
    "shift_by_ref": ("n: 4000000000\nboom: !ref 1 << <n>\n", ("boom", "not allowed")),
    "repeat_string": ("s: x\nboom: !ref <s> * 1000000000\n", ("boom", "number")),
    "repeat_list": ("s: [1, 2]\nboom: !ref <s> * 1000000000\n", ("boom", "number")),
    "repeat_literal": ("boom: !ref \"'x' * 1000000000\"\n", ("boom", "number")),
    "product_chain": ("boom: !ref " + " * ".join(["1000000000"] * 10) + "\n",
                      ("boom", "bits")),
    "long_expression": ("boom: !ref " + " + ".join(["1"] * 30000) + "\n",
                        ("line", "expression", "characters")),
    "nested_parens": ("boom: !ref " + "(" * 150 + "1" + ")" * 150 + "\n",
                      ("line", "expression")),
    "float_overflow": ("boom: !ref 10.0 ** 400\n", ("boom", "number")),
    "divide_by_zero": ("boom: !ref 1 // 0\n", ("boom", "zero")),
    "complex_result": ("boom: !ref (-8) ** 0.5\n", ("boom", "number")),
    "call_in_ref": ("boom: !ref __import__('os').getpid()\n", ("boom", "call is not allowed")),
    "huge_decimal": ("boom: 1" + "0" * 100_000 + "\n", ("line", "digits")),
    "huge_hex": ("boom: 0x" + "f" * 200_000 + "\n", ("line", "digits")),
    "deep_flow_nesting": ("boom: " + "[" * 50_000 + "]" * 50_000 + "\n", ("line", "nest")),
    "deep_block_nesting": ("boom:\n" + "\n".join(
        "  " * (i + 1) + f"k{i}:" for i in range(200)) + " 1\n", ("line", "nest")),
    "alias_bomb": (_tower(9, 10), ("line", "alias")),
    "alias_count": ("a: &a 1\nb: [" + ", ".join(["*a"] * 5000) + "]\n", ("line", "alias")),
    "ref_bomb": (_ref_tower(9, 10), ("expand",)),
    "ref_chain": (_ref_chain(200), ("deep",)),
    "object_tag": ("boom: !!python/object/apply:os.system ['true']\n", ("not a readable",)),
}

# name -> words of the reason; made by :func:`make_hostile` as files of another kind
FILE_VARIANTS: dict[str, tuple[str, ...]] = {
    "huge_document": ("kb",),  # 100 MB of comments after the valid YAML
    "yaml_is_directory": ("not a regular file",),
    "yaml_is_fifo": ("not a regular file",),
    "yaml_links_to_dev_zero": ("not a regular file",),
}

VARIANTS = {**{k: w for k, (_, w) in TEXT_VARIANTS.items()}, **FILE_VARIANTS}


def hostile_yaml(variant: str) -> str:
    """The valid tiny CosyVoice3 YAML with ``variant``'s hostile part appended."""
    return yaml_text(3) + "\n" + TEXT_VARIANTS[variant][0]


def make_hostile(good: Path, out: Path, variant: str) -> Path:
    """A copy of the good tiny v3 folder ``good`` at ``out`` whose YAML is ``variant``."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(good, out)
    path = out / YAML
    path.unlink()
    if variant in TEXT_VARIANTS:
        path.write_text(hostile_yaml(variant), encoding="utf-8")
    elif variant == "huge_document":
        with open(path, "w", encoding="utf-8") as f:
            f.write(yaml_text(3))
            line = "# " + "x" * 1021 + "\n"
            for _ in range(100 * MB // len(line)):
                f.write(line)
    elif variant == "yaml_is_directory":
        path.mkdir()
    elif variant == "yaml_is_fifo":
        os.mkfifo(path)
    elif variant == "yaml_links_to_dev_zero":
        path.symlink_to("/dev/zero")
    else:
        raise ValueError(f"unknown variant {variant!r}")
    return out
