"""The audit log, newest first, a page at a time, filtered by the kind of change and by
who made it; and all of it as JSON lines, for the operator, streamed a page at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict

from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from layers.shared.audit.log import PAGE as SHOWN
from layers.shared.audit.log import AuditEntry

# Entries a chunk of the JSON lines: one page read from the database.
PAGE = 1000
# The page's one-click filters: an action's prefix (``AuditLog.entries``), in words.
KINDS = (
    ("note", "notes"), ("skill", "skills"), ("episode", "episodes"), ("fact", "facts"),
    ("person", "people forgotten"), ("tool", "tool calls"), ("mcp", "MCP clients"),
    ("login", "sign-ins"),
)


async def entries(parts: ConsoleDependencies, action: str, actor: str,
                  before: int | None = None) -> tuple[list[AuditEntry], int | None]:
    """A page of entries, and the id the next (older) page starts before (None: none)."""
    found = await parts.stores.run(lambda stores: stores.audit.entries(
        action=action.strip() or None, actor=actor.strip() or None, before_id=before,
        limit=SHOWN + 1))
    return found[:SHOWN], found[SHOWN - 1].id if len(found) > SHOWN else None


def json_lines(stores: ConsoleStores) -> Iterator[str]:
    """Every entry, newest first, one JSON object a line, a page of them at a time."""
    before: int | None = None
    while page := stores.audit.entries(before_id=before, limit=PAGE):
        yield "".join(json.dumps(asdict(entry)) + "\n" for entry in page)
        before = page[-1].id
