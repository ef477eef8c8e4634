"""Memory notes: what waits for a founder, what was kept, rejected or replaced; a
founder keeps or rejects one here as with ✅ / ❌ on its card in Slack, or edits it (a new
version that replaces the old); each note's page shows its chain of versions."""

from __future__ import annotations

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.slack_cards import show_note_decided
from bridge.slack_api.note_cards import decided
from layers.notes.store import STATUSES, Note


async def listed(parts: ConsoleDependencies, status: str) -> list[Note]:
    chosen = status if status in STATUSES else "proposed"
    return await parts.stores.run(lambda stores: stores.notes.store.listed(chosen))


async def decide(parts: ConsoleDependencies, user: SignedInPerson, note_id: str, *, keep: bool,
                 origin: str) -> Note:
    """Keep or reject a proposed note (``ThothError`` says why it cannot be)."""

    note = await parts.stores.run(lambda stores: decided(
        stores, note_id, keep=keep, by=user.name, actor=user.actor, origin=origin))
    await show_note_decided(parts, note)
    return note


async def chain(parts: ConsoleDependencies, note_id: str) -> list[Note]:
    """The note's versions, oldest first (empty: no such note)."""
    return await parts.stores.run(lambda stores: stores.notes.store.chain(note_id))


async def edit(parts: ConsoleDependencies, user: SignedInPerson, note_id: str, text: str,
               origin: str) -> Note:
    """The note's new version (``ThothError`` says why there cannot be one); the old one's
    cards in Slack say it was replaced."""

    def change(stores: ConsoleStores) -> tuple[Note, Note | None]:
        newer = stores.notes.edit(note_id, text, by=user.name)
        if newer.id != note_id:
            stores.audit.record(actor=user.actor, action="note.edit",
                                target=f"note:{note_id}", origin=origin,
                                detail=f"replaced by note:{newer.id}")
        return newer, stores.notes.store.get(note_id)

    newer, older = await parts.stores.run(change)
    if older is not None and older.id != newer.id:
        await show_note_decided(parts, older)
    return newer
