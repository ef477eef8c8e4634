"""The overview: what each part of memory holds, and today's spend against the cap."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.console.parts import ConsoleParts, ConsoleStores


@dataclass(frozen=True)
class Overview:
    episodes: int
    notes: dict[str, int]
    skills: int
    spent_today_usd: float
    cap_usd: float


async def overview(parts: ConsoleParts) -> Overview:
    def read(stores: ConsoleStores) -> Overview:
        # Counted, not listed: a listing stops at its page size.
        return Overview(stores.episodic.store.count(), stores.notes.store.counts(),
                        len(stores.skills.skills()),
                        stores.ledger.spent_today(), parts.daily_cap_usd)

    return await parts.stores.run(read)
