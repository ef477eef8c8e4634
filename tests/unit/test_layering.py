"""Imports run down the tree only: layers/ <- reflection/ <- bridge/.

``layers/`` is the memory stack and knows nothing above it; ``reflection/`` builds on
the layers and gets everything else (its model, its notifier) through Protocols it
owns; ``bridge/`` is the composition root and the transports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"layers": {"bridge", "reflection"}, "reflection": {"bridge"}}


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
