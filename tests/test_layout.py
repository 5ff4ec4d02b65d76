"""The house's layout rules, checked on the source: no module over 500 lines, the vocoder
reached only by the offline engine, the surfaces (server, CLI) reaching models only
through the Engine boundary, and no setup-time tool imported at run time."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "cosyvoice"


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names), at any depth of the file."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def importers_of(prefix: str) -> set[str]:
    found = set()
    for path in modules():
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(prefix.replace(".", "/") + "/") and any(
                name == prefix or name.startswith(prefix + ".") for name in imports(path)):
            found.add(rel)
    return found


def test_no_module_is_over_500_lines():
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in modules()}
    assert {k: v for k, v in sizes.items() if v > 500} == {}


def test_the_vocoder_is_imported_by_the_offline_engine_only():
    assert importers_of("cosyvoice.vocoder") <= {"cosyvoice/engine/offline/models.py"}
    assert importers_of("cosyvoice.vocoder")  # the rule checks something real


def test_surfaces_reach_models_through_the_engine_only():
    for prefix in ("cosyvoice.acoustic", "cosyvoice.vocoder", "cosyvoice.engine.offline"):
        users = importers_of(prefix)
        assert not {u for u in users if u.startswith(("cosyvoice/server/", "cosyvoice/cli"))
                    }, (prefix, users)


def test_setup_tools_are_not_imported_at_run_time():
    assert importers_of("cosyvoice.tools") == set()
