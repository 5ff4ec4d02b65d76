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


# ---- floors and circles --------------------------------------------------------------------
# The house from the ground up: a room imports only rooms on lower floors (never a room on its
# own floor or above). A new room is added here on purpose, which is the point.
FLOORS: dict[str, int] = {
    "config": 0, "errors": 0, "files": 0, "bounded_json": 0,
    "state_files": 1, "runtime": 1,
    "settings": 2,
    "assets": 3, "audio": 3, "kernels": 3, "subtitles": 3, "lifecycle": 3, "frontend": 3,
    "speaker": 4, "vocoder": 4,
    "voice": 5, "asr": 5,
    "acoustic": 6,
    "prosody": 7,
    "engine": 8,
    "pipeline": 9,
    "longform": 10, "bootstrap": 10, "tools": 10,
    "server": 11, "cli": 11,
    "serving": 12, "__main__": 12,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path) -> set[str]:
    """The project modules ``path`` imports when it runs, at any depth (imports only for
    type checkers, under ``if TYPE_CHECKING:``, are left out); ``from pkg import mod`` names
    the module ``pkg.mod`` where it is one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    known = {_module_name(p) for p in modules()}
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known
                  else node.module for a in node.names]
                 if isinstance(node, ast.ImportFrom) and node.module else [])
        out.update(n for n in names if n.split(".")[0] == "cosyvoice")
    return out


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports. A package's ``__init__`` importing its own
    submodules (the package's face handing names on, or building lazily) is left out: the
    face is part of the package, not a room above it."""
    graph = {}
    for path in modules():
        name = _module_name(path)
        targets = _runtime_imports(path) - {name}
        if path.name == "__init__.py":
            targets = {t for t in targets if not t.startswith(name + ".")}
        graph[name] = targets
    return graph


def test_every_room_has_a_floor_and_imports_only_downward():
    graph = import_graph()
    rooms = {_room(m) for m in graph} - {"cosyvoice"}
    assert rooms - set(FLOORS) == set(), "a new room: give it a floor in FLOORS"
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if _room(a) != _room(b) and _room(b) != "cosyvoice"
                    and FLOORS[_room(a)] <= FLOORS[_room(b)])
    assert upward == []
    assert sum(len(t) for t in graph.values()) > 300  # the rule sees the real imports


def test_no_import_circles():
    """No two modules import each other, directly or round a loop (Tarjan's strongly
    connected components of the module graph, function-level imports included)."""
    graph = import_graph()
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == [], circles
