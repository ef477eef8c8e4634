"""No coroutine calls a SQLite store on a loop directly.

Slack is spoken to through the async client only, so a Slack call not awaited is a
mypy error (``unused-coroutine``, or a coroutine used as a response) and none can block.
The stores stay sync (SQLite has no async driver in the standard library, and a call is
well under a millisecond unless it waits for the write lock): called straight from a
coroutine, one that waits stalls every session on its loop. A consumer on a loop is
given the store ``Offloaded`` (``layers/shared/offloaded.py``), whose only method, ``run``,
hands the use to a thread and must be awaited (mypy says so); where a coroutine still
holds a store itself, each call must be handed to a thread
(``asyncio.to_thread(store.method, …)``, which passes the method, not a call). This
check keeps the one forgotten wrapper from being written.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Every package: a coroutine anywhere may run on the turns' loop.
CHECKED = sorted(path for package in ("bridge", "layers", "reflection")
                 for path in (ROOT / package).rglob("*.py"))
# What blocks, by the name it is reached through: the database and the stores on it.
BLOCKING = frozenset({
    "db", "sessions", "transcript", "replies", "cards", "followups", "effects", "drafts",
    "memory_notes", "episodic", "store", "seen", "reflections", "ledger", "contexts",
    "outbox", "tombstones", "notes", "inbox", "leases", "brain", "skills", "persona",
})

# ``Offloaded.run``: a coroutine, the hop to a thread itself (awaited, or shielded first).
OFFLOADED = "run"


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
                    and id(node) not in awaited and node.func.attr != OFFLOADED
                    and BLOCKING & set(_names(node.func.value))):
                found.append((node.lineno, f"{node.lineno}: {ast.unparse(node.func)}"))
    return [call for _, call in sorted(found)]


@pytest.mark.parametrize("path", CHECKED, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_coroutine_blocks_the_loop(path: Path) -> None:
    assert blocking_calls(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_a_forgotten_wrapper_and_lets_the_right_forms_pass() -> None:
    source = '''
async def handle(self):
    self._replies.record(1)
    await asyncio.to_thread(self._replies.record, 1)
    await asyncio.shield(self._replies.run(lambda replies: replies.record(1)))
    await self._parts.session_end.end_open("k")
    await self._client.chat_postMessage(channel="C1")
    def in_a_thread():
        self._replies.record(1)
    found = self._parts.sessions.find_open("k")
'''
    assert blocking_calls(source) == [
        "3: self._replies.record", "10: self._parts.sessions.find_open"
    ]


def stores_handed_to_threads(source: str) -> list[str]:
    """``line: argument`` for each ``asyncio.to_thread`` handed a store's method: a store
    reaches a coroutine ``Offloaded``, built by the composition root, never by hand."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "to_thread" and node.args
                and isinstance(node.args[0], ast.Attribute)
                and BLOCKING & set(_names(node.args[0].value))):
            found.append(f"{node.lineno}: {ast.unparse(node.args[0])}")
    return found


@pytest.mark.parametrize("path", CHECKED, ids=lambda path: str(path.relative_to(ROOT)))
def test_stores_reach_coroutines_only_offloaded(path: Path) -> None:
    assert stores_handed_to_threads(path.read_text(encoding="utf-8")) == []


def test_the_offload_check_finds_a_store_handed_to_a_thread_by_hand() -> None:
    source = (
        "async def f(self):\n"
        "    await asyncio.to_thread(self._outbox.add, turn)\n"
        "    await asyncio.to_thread(self._find_skills, text)\n"
        "    await self._outbox.run(IngestOutbox.add, turn)\n"
    )
    assert stores_handed_to_threads(source) == ["2: self._outbox.add"]


# The reflection child's notifier (a batch process with no loop), the clients' builder, and
# the app's Slack Web API, which hands the sync client to processes with no loop.
SYNC_SLACK_ALLOWED = frozenset({"notifier.py", "founder_dms.py", "clients.py", "slack_web.py"})
SYNC_SLACK_NAMES = frozenset(
    {"WebClient", "WebhookClient", "App", "SocketModeHandler", "SocketModeClient"}
)


def sync_slack_imports(source: str) -> list[str]:
    """The sync Slack clients (or Bolt's sync app) a module imports; a plain ``import`` of
    either SDK counts too (what it is used for cannot be told)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names
                      if alias.name.split(".")[0] in ("slack_sdk", "slack_bolt")]
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            ("slack_sdk", "slack_bolt")
        ):
            found += [f"{node.module}.{alias.name}" for alias in node.names
                      if alias.name in SYNC_SLACK_NAMES]
    return found


@pytest.mark.parametrize(
    "path",
    [path for path in [*(ROOT / "bridge" / "slack").rglob("*.py"),
                       *(ROOT / "bridge" / "slack_api").rglob("*.py"),
                       ROOT / "bridge" / "cli" / "serving.py"]
     if path.name not in SYNC_SLACK_ALLOWED],
    ids=lambda path: str(path.relative_to(ROOT)),
)
def test_serve_speaks_to_slack_only_through_the_async_client(path: Path) -> None:
    assert sync_slack_imports(path.read_text(encoding="utf-8")) == []


def test_the_import_check_finds_a_sync_client() -> None:
    source = (
        "from slack_sdk import WebClient\n"
        "from slack_sdk.web.async_client import AsyncWebClient\n"
        "from slack_bolt import App\n"
        "from slack_sdk.socket_mode import SocketModeClient\n"
        "import slack_sdk\n"
    )
    assert sync_slack_imports(source) == [
        "slack_sdk.WebClient", "slack_bolt.App", "slack_sdk.socket_mode.SocketModeClient",
        "slack_sdk",
    ]
