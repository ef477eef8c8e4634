"""Memory notes: what waits for a founder, what was kept, rejected or replaced; a
founder keeps or rejects one here as with ✅ / ❌ on its card in Slack, or edits it (a new
version that replaces the old); each note's page shows its chain of versions."""

from __future__ import annotations

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.pages.paging import cursor_of, newest_page
from bridge.console.slack_cards import show_note_decided
from bridge.slack_api.note_cards import decided
from layers.notes.store import STATUSES, Note
from layers.shared.errors import BadInput

# Notes a page.
SHOWN = 50


async def listed(parts: ConsoleDependencies, status: str,
                 older: str = "") -> tuple[list[Note], str | None]:
    """A page of the notes of ``status``, newest first, and where the next page starts
    ("TIME:ID"; None: this is the last)."""
    chosen = status if status in STATUSES else "proposed"
    cursor = cursor_of(older, of="notes")
    found = await parts.stores.run(lambda stores: stores.notes.store.listed(
        chosen, SHOWN + 1, older_than=cursor))
    return newest_page(found, SHOWN)


async def decide(parts: ConsoleDependencies, user: SignedInPerson, note_id: str, *, keep: bool,
                 origin: str) -> Note:
    """Keep or reject a proposed note (``ThothError`` says why it cannot be: one decided
    already says so, rather than nothing happening)."""

    def change(stores: ConsoleStores) -> Note:
        before = stores.notes.store.get(note_id)
        if before is not None and before.status != "proposed":
            raise BadInput(f"this note is {before.status} already"
                           + (": withdraw it to take it out of memory"
                              if before.status == "kept" else ""))
        return decided(stores, note_id, keep=keep, by=user.name, actor=user.actor,
                       origin=origin)

    note = await parts.stores.run(change)
    await show_note_decided(parts, note)
    return note


async def withdraw(parts: ConsoleDependencies, user: SignedInPerson, note_id: str,
                   origin: str) -> Note:
    """Take a kept (or proposed) note back, as removing its 🧠 does in Slack: its line
    leaves MEMORY.md; ``ThothError`` when there is nothing to withdraw."""
    def change(stores: ConsoleStores) -> Note:
        return withdrawn(stores, note_id, by=user.name, actor=user.actor, origin=origin,
                         why="withdrawn in the console")

    note = await parts.stores.run(change)
    await show_note_decided(parts, note)
    return note


def withdrawn(stores: ConsoleStores, note_id: str, *, by: str, actor: str, origin: str,
              why: str) -> Note:
    """Withdraw the note, audited (in a thread)."""
    before = stores.notes.store.get(note_id)
    if before is None:
        raise BadInput(f"no memory note {note_id!r}")
    note = stores.notes.withdraw(note_id, by=by, why=why)
    if note is None or note.status == before.status:
        raise BadInput(f"this note is {before.status}: there is nothing to withdraw")
    stores.audit.record(actor=actor, action="note.withdraw", target=f"note:{note.id}",
                        origin=origin, detail=why)
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
