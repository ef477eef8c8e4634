"""Memory notes: what waits for a founder, what was kept, rejected or replaced; a
founder keeps or rejects one here as with ✅ / ❌ on its card in Slack."""

from __future__ import annotations

from bridge.console.parts import ConsoleParts
from bridge.console.sign_in import ConsoleUser
from bridge.console.slack_cards import show_note_decided
from bridge.slack.note_cards import decided
from layers.notes.store import STATUSES, Note


async def listed(parts: ConsoleParts, status: str) -> list[Note]:
    chosen = status if status in STATUSES else "proposed"
    return await parts.stores.run(lambda stores: stores.notes.store.listed(chosen))


async def decide(parts: ConsoleParts, user: ConsoleUser, note_id: str, *, keep: bool,
                 origin: str) -> Note:
    """Keep or reject a proposed note (``ThothError`` says why it cannot be)."""

    note = await parts.stores.run(lambda stores: decided(
        stores, note_id, keep=keep, by=user.name, actor=user.actor, origin=origin))
    await show_note_decided(parts, note)
    return note
