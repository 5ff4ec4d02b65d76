"""Settings: CLI flag > environment variable > default; --help lists every field."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from cosyvoice.settings import Settings, build_parser, resolve_device

ROOT = Path(__file__).resolve().parent.parent


def test_defaults_match_the_product_card():
    s = Settings()
    assert (s.host, s.port, s.device) == ("0.0.0.0", 7860, "auto")


def test_env_overrides_default_and_cli_overrides_env(monkeypatch):
    monkeypatch.setenv("COSYVOICE_PORT", "9000")
    monkeypatch.setenv("COSYVOICE_PRELOAD", "false")
    monkeypatch.setenv("COSYVOICE_OUTPUTS_DIR", "/tmp/x-out")
    s = Settings.from_args([])
    assert s.port == 9000 and s.preload is False and s.outputs_dir == Path("/tmp/x-out")
    s = Settings.from_args(["--port", "7999", "--preload", "--max-text-chars", "50"])
    assert s.port == 7999 and s.preload is True and s.max_text_chars == 50


def test_bad_value_is_rejected():
    with pytest.raises(SystemExit):
        Settings.from_args(["--port", "seventy"])


def test_help_lists_every_setting():
    out = subprocess.run([sys.executable, str(ROOT / "app.py"), "--help"], capture_output=True,
                         text=True, timeout=60, cwd=ROOT).stdout
    for f in dataclasses.fields(Settings):
        assert "--" + f.name.replace("_", "-") in out
        assert "COSYVOICE_" + f.name.upper() in out
    assert build_parser(Settings()).parse_args([]).port == 7860


def test_device_resolution_without_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match="no CUDA GPU"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("tpu")
