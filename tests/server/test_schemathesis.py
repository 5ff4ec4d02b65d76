"""Property-based run of Schemathesis over the app's own OpenAPI schema: no 5xx.

Against the real app (``guarded_app``: admin actions need a token, one synthesis slot,
texts up to 120 characters so generated syntheses stay short). Restart and the reload of
every model are left out: they would stop or stall the app under test, not probe it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 30  # per operation
EXCLUDED = ("/api/v1/restart", "/admin/restart", "/admin/reload")


def test_no_server_errors_over_the_schema(guarded_app, tmp_path):
    cli = Path(sys.executable).with_name("schemathesis")
    seed = os.environ.get("SCHEMATHESIS_SEED", "20261203")
    cmd = [str(cli), "run", guarded_app.url + "/openapi.json", "--checks", "not_a_server_error",
           "--max-examples", str(MAX_EXAMPLES), "--workers", "1", "--seed", seed,
           "--generation-database", "none", "--request-timeout", "120", "--warnings", "off",
           "--report-dir", str(tmp_path)]
    for path in EXCLUDED:
        cmd += ["--exclude-path", path]
    # cwd: schemathesis keeps a crash cache (.schemathesis/) in its working directory.
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path,
                          env={**os.environ, "NO_COLOR": "1"})
    out = proc.stdout + proc.stderr
    cases = re.search(r"(\d+) generated, (\d+) passed", out)
    tested = re.search(r"Tested: (\d+)", out)
    print(f"schemathesis (seed {seed}): {cases.group(0) if cases else '?'} cases over "
          f"{tested.group(1) if tested else '?'} operations")
    assert proc.returncode == 0, out[-6000:]
    assert cases and int(cases.group(1)) == int(cases.group(2)) > 200, out[-3000:]
    assert tested and int(tested.group(1)) >= 14
    assert guarded_app.ready()
