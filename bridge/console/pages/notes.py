"""Memory notes: what waits for a founder, what was kept, rejected or replaced; a
founder keeps or rejects one here as with ✅ / ❌ on its card in Slack."""

from __future__ import annotations

from bridge.console.parts import ConsoleParts, ConsoleStores
from bridge.console.sign_in import ConsoleUser
from bridge.console.slack_cards import show_note_decided
from layers.notes.store import STATUSES, Note


async def listed(parts: ConsoleParts, status: str) -> list[Note]:
    chosen = status if status in STATUSES else "proposed"
    return await parts.stores.run(lambda stores: stores.notes.store.listed(chosen))


async def decide(parts: ConsoleParts, user: ConsoleUser, note_id: str, *, keep: bool,
                 origin: str) -> Note:
    """Keep or reject a proposed note (``ThothError`` says why it cannot be)."""

    def change(stores: ConsoleStores) -> Note:
        note = stores.notes.decide(note_id, keep=keep, by=user.name)
        stores.audit.record(actor=user.actor, action="note.keep" if keep else "note.reject",
                            target=f"note:{note_id}", origin=origin)
        return note

    decided = await parts.stores.run(change)
    await show_note_decided(parts, decided)
    return decided
