"""The overview: what each of the five layers holds, and today's spend against the cap.
What grows without bound is counted, not listed (a listing stops at its page size; the
drafts waiting are a handful); what `thoth doctor` checks is the Health page, run when
asked."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from layers.procedural.drafts import DraftState


@dataclass(frozen=True)
class Overview:
    open_sessions: int
    # The identity backend ("local", "honcho"), None when the layer is off.
    identity: str | None
    episodes: int
    notes: dict[str, int]
    skills: int
    drafts_pending: int
    reflections: dict[str, int]
    spent_today_usd: float
    cap_usd: float


async def overview(parts: ConsoleDependencies) -> Overview:
    def read(stores: ConsoleStores) -> Overview:
        return Overview(
            stores.sessions.count_open(),
            None if parts.identity is None else parts.identity.name,
            stores.episodic.store.count(), stores.notes.store.counts(),
            len(stores.skills.skills()), len(stores.drafts.list(DraftState.PENDING)),
            stores.reflections.counts(), stores.ledger.spent_today(), parts.daily_cap_usd)

    return await parts.stores.run(read)
