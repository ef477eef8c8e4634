"""No coroutine calls the sync Slack client or a SQLite store on the turns' loop.

Slack's ``WebClient`` and every store block; called straight from a coroutine they
stall every session on the loop. Inside an ``async def`` such a call must be handed to
a thread (``asyncio.to_thread(store.method, …)``, which passes the method, not a call)
or be awaited (an async method). Until the Slack side is async end to end (issue 15),
this check is what keeps the one forgotten wrapper from being written.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = sorted(
    [*(ROOT / "bridge" / "slack").glob("*.py"), *(ROOT / "bridge" / "pipeline").glob("*.py"),
     *(ROOT / "bridge" / "terminal").glob("*.py"), ROOT / "bridge" / "session_end.py",
     ROOT / "bridge" / "housekeeping.py"]
)
# What blocks, by the name it is reached through: the sync Slack client, the database
# and the stores built on it.
BLOCKING = frozenset({
    "client", "db", "sessions", "transcript", "replies", "cards", "directory", "followups",
    "effects", "drafts", "memory_notes", "episodic", "store", "seen", "reflections", "ledger",
    "assistant",
})


def _names(node: ast.expr) -> list[str]:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr.lstrip("_"))
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id.lstrip("_"))
    return names


def blocking_calls(source: str) -> list[str]:
    """``line: call`` for each blocking call made directly in a coroutine's own body."""
    found: list[tuple[int, str]] = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.AsyncFunctionDef):
            continue
        awaited: set[int] = set()
        body: list[ast.AST] = []
        pending: list[ast.AST] = list(function.body)
        while pending:
            node = pending.pop()
            # A nested def or lambda runs where it is called (usually in a thread).
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
                awaited.add(id(node.value))
            body.append(node)
            pending.extend(ast.iter_child_nodes(node))
        for node in body:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and id(node) not in awaited
                    and BLOCKING & set(_names(node.func.value))):
                found.append((node.lineno, f"{node.lineno}: {ast.unparse(node.func)}"))
    return [call for _, call in sorted(found)]


@pytest.mark.parametrize("path", CHECKED, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_coroutine_blocks_the_loop(path: Path) -> None:
    assert blocking_calls(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_a_forgotten_wrapper_and_lets_the_right_forms_pass() -> None:
    source = '''
async def handle(self):
    self._client.chat_postMessage(channel="C1")
    await asyncio.to_thread(self._client.chat_postMessage, channel="C1")
    await self._parts.session_end.end_open("k")
    def in_a_thread():
        self._replies.record(1)
    found = self._parts.sessions.find_open("k")
'''
    assert blocking_calls(source) == [
        "3: self._client.chat_postMessage", "8: self._parts.sessions.find_open"
    ]
