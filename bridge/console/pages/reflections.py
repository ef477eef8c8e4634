"""Reflections: each finished session's report — its outcome, what worked and what did
not — and what became of each proposal it made (notes kept, rejected or still waiting;
skill drafts approved or not). Founders' and the operator's, as notes are: a report
quotes conversations from every place."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from layers.notes.store import Note
from layers.procedural.drafts import Draft
from reflection.state import ReflectionRow

# The newest reports the page lists.
SHOWN = 50


@dataclass(frozen=True)
class ReflectionPage:
    row: ReflectionRow
    notes: list[Note]
    drafts: list[Draft]


async def finished(parts: ConsoleDependencies) -> list[ReflectionPage]:
    def read(stores: ConsoleStores) -> list[ReflectionPage]:
        return [ReflectionPage(row, stores.notes.store.of_session(row.session_id),
                               stores.drafts.of_session(row.session_id))
                for row in stores.reflections.finished(SHOWN)]

    return await parts.stores.run(read)
