"""The harness's fixed, versioned test set: sentences by part, and the cloning cases.

The sentences live in ``testset_v<N>.json`` beside this file; :data:`HASHES` records the
sha256 of each version's content, so a file edited without a new version is refused (a
figure is only comparable with figures of the same version). Parts: ``en`` and ``zh`` (20
unseen sentences each), ``mixed`` (Mandarin with English words), ``long_en`` / ``long_zh``
(one long-form passage each). The cloning cases are :func:`bench.heldout.build_cases`'s: a
prompt of each speaker and held-out clips of the same speaker that the cloner never hears.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = 1
# version → sha256 of the file's parsed content (canonical JSON); a new version adds a line
HASHES = {1: "4c945c5bb58175fb4cb9419f755d1f79321e442f71da6d3a6c07e1a5b2026a1a"}


@dataclass(frozen=True)
class Item:
    """One text of the test set: ``id`` is ``<part>/<index>`` (stable within a version)."""

    id: str
    part: str
    lang: str  # the language its transcript is scored in: "en" | "zh"
    text: str


@dataclass(frozen=True)
class TestSet:
    version: int
    sha256: str
    parts: dict[str, list[Item]]
    clone_cases: tuple[str, ...]

    def items(self, part: str, limit: int | None = None) -> list[Item]:
        if part not in self.parts:
            raise ValueError(f"unknown test set part {part!r}; have {', '.join(self.parts)}")
        return self.parts[part][:limit]


def content_hash(data: dict) -> str:
    canonical = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load(version: int = VERSION) -> TestSet:
    """The test set of ``version``; ValueError when its file no longer matches its hash."""
    data = json.loads((HERE / f"testset_v{version}.json").read_text("utf-8"))
    digest = content_hash(data)
    if HASHES.get(version) != digest or data.get("version") != version:
        raise ValueError(f"bench/eval/testset_v{version}.json changed (sha256 {digest}): "
                         "figures would no longer compare; put the change in a new version "
                         "file and record its hash in bench/eval/testset.py HASHES")
    parts = {name: [Item(f"{name}/{i}", name, part["lang"], text)
                    for i, text in enumerate(part["items"])]
             for name, part in data["parts"].items()}
    return TestSet(version, digest, parts, tuple(data["clone_cases"]))


def clone_cases(names: list[str] | tuple[str, ...]):
    """The cloning cases named (bench.heldout; a case whose source package is missing is
    skipped there with a warning), in the order given."""
    from bench.heldout import build_cases

    by_name = {c.name: c for c in build_cases()}
    return [by_name[n] for n in names if n in by_name]
