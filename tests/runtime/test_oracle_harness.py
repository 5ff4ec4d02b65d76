"""The oracle harness runs the reference in its own interpreter, never in the pytest process."""

from __future__ import annotations

import sys

import pytest
import torch

pytestmark = pytest.mark.oracle


def test_oracle_runs_the_reference_package_in_a_subprocess(oracle) -> None:
    out = oracle("smoke.py", x=torch.arange(3))
    assert torch.equal(out["doubled"], torch.tensor([0, 2, 4]))
    assert out["oracle_file"].endswith("oracles/cosyvoice/cosyvoice/__init__.py")
    # The pytest process has no reference module loaded (ours may be, theirs never).
    for name, module in list(sys.modules.items()):
        if name == "cosyvoice" or name.startswith("cosyvoice."):
            assert "oracles" not in str(getattr(module, "__file__", "") or ""), name


def test_oracle_failure_carries_its_traceback(oracle, tmp_path) -> None:
    from tests.oracle.harness import OracleError

    with pytest.raises(OracleError, match="TypeError"):
        oracle("smoke.py", x=torch.arange(3), unexpected=1)
