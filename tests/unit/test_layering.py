"""Imports run down the tree only: layers/ <- reflection/ <- bridge/.

``layers/`` is the memory stack and knows nothing above it; ``reflection/`` builds on
the layers and gets everything else (its model, its notifier) through Protocols it
owns; ``bridge/`` is the composition root and the transports.

Inside ``layers/`` the four memory layers stand side by side on one floor: none imports
another, and the floor (places, embedding, storage, redaction, errors, backoff,
offloaded) imports no layer. ``notes`` governs what procedural memory keeps
(``MEMORY.md``), so it may use procedural, and only it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"layers": {"bridge", "reflection"}, "reflection": {"bridge"}}


MEMORY_LAYERS = {"working", "identity", "episodic", "procedural"}
FLOOR = {"places", "embedding", "storage", "redaction", "errors", "backoff", "offloaded",
         "audit"}
MAY_ALSO_USE = {"notes": {"procedural"}}


def _imported_packages(source: Path) -> set[str]:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_import_runs_back_up_the_tree(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & FORBIDDEN[package])
        for path in sorted((ROOT / package).rglob("*.py"))
        if _imported_packages(path) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "lazy.py"
    module.write_text("def f():\n    from bridge.app import build\n    import reflection.run\n")
    assert _imported_packages(module) == {"bridge", "reflection"}


def _imported_layers(source: Path) -> set[str]:
    """The parts of ``layers`` a module imports (``layers.places`` -> ``places``)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                 and node.level == 0 else [])
        for name in names:
            parts = name.split(".")
            if parts[0] == "layers" and len(parts) > 1:
                found.add(parts[1])
    return found


def _part_of(path: Path) -> str:
    relative = path.relative_to(ROOT / "layers").parts
    return relative[0].removesuffix(".py")


@pytest.mark.parametrize("part", sorted(MEMORY_LAYERS | FLOOR | {"notes"}))
def test_layers_stand_side_by_side_on_one_floor(part: str) -> None:
    allowed = {part} | FLOOR | MAY_ALSO_USE.get(part, set())
    if part in FLOOR:
        allowed = {part} | (FLOOR - {part})  # the floor may use itself, never a layer
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_layers(path) - allowed)
        for path in sorted((ROOT / "layers").rglob("*.py"))
        if _part_of(path) == part and _imported_layers(path) - allowed
    }
    assert offenders == {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports, wherever the import sits (a function,
    ``TYPE_CHECKING``): a circle anywhere is a circle."""
    paths = [path for package in ("bridge", "layers", "reflection")
             for path in (ROOT / package).rglob("*.py")]
    known = {_module_name(path) for path in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in known}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                edges |= {f"{node.module}.{alias.name}" for alias in node.names
                          if f"{node.module}.{alias.name}" in known}
                if node.module in known:
                    edges.add(node.module)
        graph[_module_name(path)] = edges - {_module_name(path)}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == module:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle() -> None:
    assert _circles(_import_graph()) == []


def test_the_circle_check_finds_one() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
