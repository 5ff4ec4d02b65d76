"""The flow and HiFT parts load from a released-layout folder (tiny, random weights made by the
reference's modules) with strict keys, run, and a part of the wrong version is refused by name."""

from __future__ import annotations

import pytest
import torch

from cosyvoice.runtime.flow import FlowV2, FlowV3
from cosyvoice.runtime.folder import ModelFolderError, check_folder, load_part
from cosyvoice.runtime.hift import HiFTGenerator
from tests.runtime.conftest import folder_copy
from tests.runtime.parity_cases import one_thread  # noqa: F401 (fixture)

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("one_thread")]


@pytest.mark.parametrize("version", [2, 3])
def test_flow_and_hift_load_strictly_and_vocode(request, version: int) -> None:
    folder = check_folder(request.getfixturevalue(f"tiny_v{version}"), version)
    flow, hift = load_part(folder, "flow"), load_part(folder, "hift")
    assert isinstance(flow, FlowV2 if version == 2 else FlowV3)
    assert isinstance(hift, HiFTGenerator) and hift.config.causal == (version == 3)
    gen = torch.Generator().manual_seed(0)
    mel = flow.inference(torch.randint(0, 6561, (1, 10), generator=gen), torch.tensor([10]),
                         torch.randint(0, 6561, (1, 4), generator=gen), torch.tensor([4]),
                         torch.randn(1, 8, 80, generator=gen), torch.randn(1, 192, generator=gen))
    assert mel.shape == (1, 80, 20)
    wave, _ = hift.inference(mel)
    assert wave.shape == (1, 20 * 480) and bool(torch.isfinite(wave).all())


def test_a_v2_flow_in_a_v3_folder_names_flow_pt(tiny_v2, tiny_v3, tmp_path) -> None:
    dst = folder_copy(tiny_v3, tmp_path / "mixed")
    (dst / "flow.pt").unlink()
    (dst / "flow.pt").symlink_to(tiny_v2 / "flow.pt")
    with pytest.raises(ModelFolderError, match="flow.pt"):
        load_part(check_folder(dst, 3), "flow")


def test_a_flow_section_we_cannot_build_names_the_yaml(tiny_v3, tmp_path) -> None:
    dst = folder_copy(tiny_v3, tmp_path / "odd", replace=("cosyvoice3.yaml",))
    yaml = dst / "cosyvoice3.yaml"
    yaml.write_text(yaml.read_text().replace("CausalMaskedDiffWithDiT", "MaskedDiffWithXvec"))
    with pytest.raises(ModelFolderError, match="cosyvoice3.yaml.*flow"):
        load_part(check_folder(dst, 3), "flow")
