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


def test_a_wrong_oracle_path_fails_under_ci_instead_of_skipping(tmp_path) -> None:
    """``COSYVOICE_ORACLE`` naming a folder without the reference, with ``CI=true``: the
    parity tests fail (with the reason), they do not skip."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "CI": "true", "COSYVOICE_ORACLE": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/runtime/test_oracle_harness.py::test_oracle_runs_the_reference_package_in_a_"
         "subprocess"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "oracle unavailable in CI" in proc.stdout and str(tmp_path) in proc.stdout
    assert "skipped" not in proc.stdout.splitlines()[-1]
