"""A bad model folder is a clear error naming the file (and tensor) at fault."""

from __future__ import annotations

import pytest
import torch

from cosyvoice.runtime.folder import ModelFolderError, check_folder, load_part
from cosyvoice.runtime.llm import CosyVoiceLM
from tests.runtime.conftest import folder_copy

pytestmark = pytest.mark.oracle


def test_good_folders_load(tiny_v2, tiny_v3) -> None:
    for version, path in ((2, tiny_v2), (3, tiny_v3)):
        folder = check_folder(path, version)
        assert folder.version == version and folder.spk2info is not None
        assert folder.speech_tokenizer.name == f"speech_tokenizer_v{version}.onnx"
        assert isinstance(load_part(folder, "llm"), CosyVoiceLM)


def test_a_v2_folder_passed_as_v3_says_so(tiny_v2) -> None:
    with pytest.raises(ModelFolderError, match="is a CosyVoice2 folder .*load it as cosyvoice2"):
        check_folder(tiny_v2, 3)


@pytest.mark.parametrize("name", ["llm.pt", "campplus.onnx", "speech_tokenizer_v2.onnx",
                                  "CosyVoice-BlankEN/config.json"])
def test_missing_file_is_named(tiny_v2, tmp_path, name) -> None:
    folder = folder_copy(tiny_v2, tmp_path / "f")
    (folder / name).unlink()
    with pytest.raises(ModelFolderError, match=f"missing {name}"):
        check_folder(folder, 2)


def test_truncated_pt_is_named(tiny_v2, tmp_path) -> None:
    folder = folder_copy(tiny_v2, tmp_path / "f", replace=("llm.pt",))
    data = (folder / "llm.pt").read_bytes()
    (folder / "llm.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFolderError, match="llm.pt is truncated"):
        load_part(check_folder(folder, 2), "llm")


def test_wrong_shape_names_the_tensor(tiny_v2, tmp_path) -> None:
    folder = folder_copy(tiny_v2, tmp_path / "f", replace=("llm.pt",))
    state = torch.load(folder / "llm.pt", weights_only=True)
    state["speech_embedding.weight"] = state["speech_embedding.weight"][:, :16].clone()
    torch.save(state, folder / "llm.pt")
    with pytest.raises(ModelFolderError, match=r"tensor speech_embedding.weight has shape "
                                               r"\(6564, 16\)"):
        load_part(check_folder(folder, 2), "llm")


def test_v3_weights_in_a_v2_folder_are_named(tiny_v2, tiny_v3, tmp_path) -> None:
    folder = folder_copy(tiny_v2, tmp_path / "f", replace=("llm.pt",))
    (folder / "llm.pt").write_bytes((tiny_v3 / "llm.pt").read_bytes())
    with pytest.raises(ModelFolderError, match="llm.pt does not fit this model: missing "
                                               "llm_embedding.weight"):
        load_part(check_folder(folder, 2), "llm")


def test_yaml_that_is_not_cosyvoice_is_named(tiny_v2, tmp_path) -> None:
    folder = folder_copy(tiny_v2, tmp_path / "f", replace=("cosyvoice2.yaml",))
    (folder / "cosyvoice2.yaml").write_text("sample_rate: 24000\n")
    with pytest.raises(ModelFolderError, match="cannot read cosyvoice2.yaml: .*no 'llm"):
        check_folder(folder, 2)
