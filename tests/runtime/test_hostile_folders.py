"""Hostile model folders at the folder check (issue #35 items 2 and 11): every file the runtime
opens must be a regular file, the YAML is refused with a reason naming it, and a bad
``spk2info.pt`` is named without PyTorch's advice to load it with ``weights_only=False``.
Folders of our own making (tests/cosyvoice_folder.py): no oracle needed."""

from __future__ import annotations

import os
import shutil
import time
from fractions import Fraction

import pytest
import torch

from cosyvoice.runtime.folder import ModelFolderError, check_folder
from cosyvoice.runtime.synthesis import load_spk2info
from tests.hostile_folders import FILE_VARIANTS, TEXT_VARIANTS, make_hostile


def _refused(call, *words: str) -> str:
    t0 = time.perf_counter()
    with pytest.raises(ModelFolderError) as info:
        call()
    message = str(info.value)
    assert time.perf_counter() - t0 < 5.0, message
    for word in words:
        assert word in message.lower(), f"{word!r} not in {message!r}"
    return message


@pytest.mark.parametrize("variant", [*FILE_VARIANTS, "power_tower", "alias_bomb", "huge_hex"])
def test_a_hostile_yaml_fails_the_folder_check(cv_folder_v3, tmp_path, variant) -> None:
    folder = make_hostile(cv_folder_v3, tmp_path / "f", variant)
    words = FILE_VARIANTS.get(variant) or TEXT_VARIANTS[variant][1]
    message = _refused(lambda: check_folder(folder, 3), "cosyvoice3.yaml", *words)
    assert " / " in message  # English / Chinese, as every folder error


@pytest.mark.parametrize("name", ["llm.pt", "spk2info.pt", "CosyVoice-BlankEN/config.json",
                                  "CosyVoice-BlankEN/tokenizer.json"])
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_any_file_the_runtime_reads_must_be_a_regular_file(cv_folder_v3, tmp_path, name,
                                                          kind) -> None:
    folder = tmp_path / "f"
    shutil.copytree(cv_folder_v3, folder)
    path = folder / name
    if path.exists():
        path.unlink()
    {"fifo": os.mkfifo, "dev_zero": lambda p: p.symlink_to("/dev/zero"),
     "directory": os.mkdir}[kind](path)
    _refused(lambda: check_folder(folder, 3), name.lower(), "is not a regular file")


def test_a_link_to_a_regular_file_is_fine(cv_folder_v3, tmp_path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    for path in cv_folder_v3.iterdir():
        (folder / path.name).symlink_to(path)
    assert check_folder(folder, 3).version == 3


@pytest.mark.parametrize("write, words", [
    (lambda p: p.write_bytes(b"not a checkpoint"),
     ("spk2info.pt is damaged or not a pytorch file; remove it or download it again",)),
    (lambda p: p.write_bytes(b"PK\x03\x04" + b"\0" * 64),
     ("spk2info.pt is truncated or not a pytorch file; remove it or download it again",)),
    (lambda p: torch.save({"v": {"x": Fraction(1, 2)}}, p),
     ("holds objects other than tensors (fractions.fraction)", "could run code")),
    (lambda p: torch.save({"v": [torch.zeros(2)]}, p), ("not a dict of voices",)),
], ids=["garbage", "truncated_zip", "objects", "wrong_shape"])
def test_a_bad_spk2info_is_named_without_unsafe_advice(tmp_path, write, words) -> None:
    path = tmp_path / "spk2info.pt"
    write(path)
    message = _refused(lambda: load_spk2info(path), *words)
    assert "weights_only" not in message and "trust" not in message.lower(), message


def test_yaml_sizes_that_do_not_fit_the_weights_are_refused_before_a_real_build(
        cv_folder_v3, tmp_path, monkeypatch) -> None:
    """``dim: 4096`` for the tiny DiT asks for ~700 MB of weights the file does not hold: the
    shapes are compared on the meta device, and no real (allocating) build happens."""
    import cosyvoice.runtime.folder as folder_module

    folder = tmp_path / "f"
    shutil.copytree(cv_folder_v3, folder)
    yaml_path = folder / "cosyvoice3.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    assert text.count("            dim: 32\n") == 1  # the flow estimator's width
    yaml_path.write_text(text.replace("            dim: 32\n", "            dim: 4096\n"),
                         encoding="utf-8")
    devices = []
    build = folder_module.BUILDERS["flow"]

    def recording(model_folder):
        devices.append(str(torch.get_default_device()))
        return build(model_folder)

    monkeypatch.setitem(folder_module.BUILDERS, "flow", recording)
    checked = check_folder(folder, 3)
    _refused(lambda: folder_module.load_part(checked, "flow"),
             "flow.pt: tensor", "the yaml's model needs")
    assert devices == ["meta"]
    monkeypatch.setitem(folder_module.BUILDERS, "flow", build)
    assert folder_module.load_part(check_folder(cv_folder_v3, 3), "flow") is not None
