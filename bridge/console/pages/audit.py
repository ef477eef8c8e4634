"""The audit log, newest first, filtered by the kind of change and by who made it; and
all of it as JSON lines, for the operator."""

from __future__ import annotations

import json
from dataclasses import asdict

from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from layers.shared.audit.log import AuditEntry


async def entries(parts: ConsoleDependencies, action: str, actor: str) -> list[AuditEntry]:
    return await parts.stores.run(lambda stores: stores.audit.entries(
        action=action.strip() or None, actor=actor.strip() or None))


async def as_json_lines(parts: ConsoleDependencies) -> str:
    def every(stores: ConsoleStores) -> list[AuditEntry]:
        found: list[AuditEntry] = []
        before: int | None = None
        while page := stores.audit.entries(before_id=before, limit=1000):
            found += page
            before = page[-1].id
        return found

    return "".join(json.dumps(asdict(entry)) + "\n" for entry in await parts.stores.run(every))
