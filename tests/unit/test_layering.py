"""Imports run down the tree only: layers/ <- reflection/ <- bridge/, and inside bridge/
down its floors, the four surfaces (Slack, the console, MCP, the terminal) side by side.

``layers/`` is the memory stack and knows nothing above it; ``reflection/`` builds on
the layers and gets everything else (its model, its notifier) through Protocols it
owns; ``bridge/`` is the composition root and the transports.

Inside ``layers/`` the four memory layers stand side by side on one floor: none imports
another, and the floor they share (``layers/shared/``: places, embedding, storage,
redaction, audit, errors, backoff, offloaded) imports no layer. ``notes`` governs what
procedural memory keeps (``MEMORY.md``), so it may use procedural, and only it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"layers": {"bridge", "reflection"}, "reflection": {"bridge"}}


MEMORY_LAYERS = {"working", "identity", "episodic", "procedural"}
# What every layer stands on (places, embedding, storage, redaction, audit, errors,
# backoff, offloaded), kept apart from the layers in layers/shared/.
FLOOR = {"shared"}
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
    """The parts of ``layers`` a module imports (``layers.shared.places`` -> ``shared``)."""
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


# bridge/'s floors, top down: a part imports only parts on floors below its own, so the
# ways in (one floor) never import each other, and nothing imports a floor above it.
BRIDGE_FLOORS: tuple[frozenset[str], ...] = tuple(frozenset(floor) for floor in (
    {"__main__"},
    {"cli"},
    # The surfaces (and the worker, the process beside them): each stands on what is below.
    {"slack", "console", "mcp", "terminal", "worker"},
    {"health_checks", "workspace_purge"},
    # The composition root.
    {"app"},
    # What two surfaces share: Slack's Web API, serving HTTP.
    # The commands people type, written once for every transport.
    {"commands"},
    {"slack_api", "web"},
    {"housekeeping", "reflection_launcher", "all_tables", "console_links"},
    # The team's own tools (MCP servers), offered in a turn: built on the pipeline's tools.
    # Routines: work on a schedule, each run a turn.
    {"team_tools", "routines"},
    # Each person's own sign-ins to remote servers, which the team's tools use.
    {"access", "session_end", "pipeline", "connections"},
    {"settings"},
    {"model"},
    {"messages", "slack_tables", "forget_exchange", "forget_person", "files"},
))


def _bridge_part(path: Path) -> str:
    return path.relative_to(ROOT / "bridge").parts[0].removesuffix(".py")


def _imported_bridge_parts(source: Path) -> set[str]:
    """The parts of ``bridge`` a module imports (``bridge.slack_api.clients`` ->
    ``slack_api``; ``from bridge import messages`` -> ``messages``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                 and node.level == 0 else [])
        if isinstance(node, ast.ImportFrom) and node.module == "bridge":
            names = [f"bridge.{alias.name}" for alias in node.names]
        found |= {name.split(".")[1] for name in names
                  if name.startswith("bridge.") and len(name.split(".")) > 1}
    return found


def _floor_of(part: str) -> int:
    return next(number for number, floor in enumerate(BRIDGE_FLOORS) if part in floor)


def _up_or_across(path: Path) -> list[str]:
    """What ``path`` imports of bridge/ on its own floor or above (its own part aside)."""
    own = _bridge_part(path)
    return sorted(part for part in _imported_bridge_parts(path) - {own}
                  if _floor_of(part) <= _floor_of(own))


def test_every_part_of_bridge_has_a_floor() -> None:
    parts = {_bridge_part(path) for path in (ROOT / "bridge").rglob("*.py")} - {"__init__"}
    assert parts - set().union(*BRIDGE_FLOORS) == set()


def test_bridge_imports_run_down_its_floors_and_surfaces_stay_apart() -> None:
    offenders = {
        str(path.relative_to(ROOT)): _up_or_across(path)
        for path in sorted((ROOT / "bridge").rglob("*.py"))
        if _bridge_part(path) != "__init__" and _up_or_across(path)
    }
    assert offenders == {}


def test_the_floor_check_sees_a_surface_importing_another(tmp_path: Path) -> None:
    module = tmp_path / "bridge" / "console" / "page.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from bridge.mcp.tokens import McpTokens\n"
                      "from bridge import app\n")
    assert _imported_bridge_parts(module) == {"mcp", "app"}
    assert _floor_of("mcp") == _floor_of("console") < _floor_of("app")
