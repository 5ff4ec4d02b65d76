"""gradio imported through this package skips its type-stub upkeep and still builds a UI
(cosyvoice.server.gradio_setup)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

PROBE = """
import time
import cosyvoice.server
from cosyvoice.server import gradio_setup
import gradio as gr
from gradio import component_meta
assert component_meta.create_or_modify_pyi is gradio_setup._no_stub
assert not any(isinstance(f, gradio_setup._SkipStubUpkeep) for f in __import__("sys").meta_path)
with gr.Blocks() as demo:
    box = gr.Textbox(label="x")
    gr.Button("go").click(lambda s: s.upper(), box, box)
print("built", type(demo).__name__, len(demo.blocks))
"""


def test_gradio_imports_without_its_stub_upkeep_and_builds_a_ui():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "built Blocks" in out.stdout
