"""Tiny CosyVoice2/3 folders in the released layout, weights made by the reference's modules.

Session-scoped: each is built once per test run (about 20 s each on 2 shared cores) through the
oracle (tests/oracle), so every test using one needs the oracle env (skipped locally without it,
a failure under CI=true). Tests must not modify them: copy (:func:`folder_copy`) first.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _make(tmp_path_factory, oracle, version: int) -> Path:
    from bench.make_random_cosyvoice import make_folder

    return make_folder(tmp_path_factory.mktemp(f"cosyvoice{version}-tiny"), version, "tiny",
                       seed=version)


@pytest.fixture(scope="session")
def tiny_v2(tmp_path_factory, oracle) -> Path:
    return _make(tmp_path_factory, oracle, 2)


@pytest.fixture(scope="session")
def tiny_v3(tmp_path_factory, oracle) -> Path:
    return _make(tmp_path_factory, oracle, 3)


def folder_copy(src: Path, dst: Path, replace: tuple[str, ...] = ()) -> Path:
    """A cheap copy: symlinks to ``src``'s files, except ``replace`` (real copies to edit)."""
    for path in src.rglob("*"):
        rel = path.relative_to(src)
        target = dst / rel
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif rel.as_posix() in replace:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, target)
    return dst
