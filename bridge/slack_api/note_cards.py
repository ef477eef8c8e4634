"""Memory-note approval cards: the note's whole text, where it was said, ✅ / ❌ pre-added.

The reflection child (or the 🧠 reaction) posts one per proposed note; a founder's ✅
keeps the note, ❌ rejects it (``reactions.py``), and the card is edited to say who
decided. A note is one line (at most 300 characters), so the card always shows it whole.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient

from bridge.console_links import ConsoleLinks
from bridge.slack_api.card_edits import edit_card
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.escaping import escape, mention
from layers.notes.governance import NoteGovernance
from layers.notes.store import Note
from layers.shared.audit.log import AuditLog
from layers.shared.storage.database import Database

log = logging.getLogger(__name__)

NOTE_CARD_REACTIONS = ("white_check_mark", "x")


class NoteCardStore:
    """Which message is which note's card (the ``slack_note_cards`` table)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, note_id: str, *, channel: str, ts: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO slack_note_cards (channel, ts, note_id) VALUES (?, ?, ?)"
                " ON CONFLICT (channel, ts) DO UPDATE SET note_id = excluded.note_id",
                (channel, ts, note_id),
            )

    def find(self, channel: str, ts: str) -> str | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT note_id FROM slack_note_cards WHERE channel = ? AND ts = ?",
                (channel, ts),
            ).fetchone()
        return None if row is None else str(row[0])

    def cards_of(self, note_id: str) -> list[tuple[str, str]]:
        """Every card of the note, as (channel, ts)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT channel, ts FROM slack_note_cards WHERE note_id = ?", (note_id,)
            ).fetchall()
        return [(str(channel), str(ts)) for channel, ts in rows]


def note_card_message(note: Note, console: ConsoleLinks | None) -> dict[str, Any]:
    """The card as Slack markdown: the note quoted whole, escaped, what a founder can do
    (or who decided), and its page in the console (its versions, who decided)."""
    if note.status == "proposed":
        verdict = "React ✅ to keep it as standing memory here, ❌ to reject it (founders)."
    else:
        word = {"kept": "Kept", "rejected": "Rejected", "replaced": "Replaced"}[note.status]
        by = note.decided_by or ""
        verdict = f"{word} by {mention(by) if by.startswith(('U', 'W')) else escape(by)}."
    said = escape(note.text)
    # markdown_text alone: Slack refuses it beside text (markdown_text_conflict), and
    # notifications read it.
    text = f"Memory note proposed ({escape(note.source)}):\n> {said}\n{verdict}"
    if console is not None:
        text += f"\n[See it in the console]({console.note(note.id)})"
    return {"markdown_text": text}


async def show_on_cards(client: AsyncWebClient, note: Note,
                        cards: Sequence[tuple[str, str]], console: ConsoleLinks | None) -> None:
    """Each of the note's cards (channel, ts) edited to say what became of it; a card
    Slack will not edit is logged, and the decision stands. While Slack fails an edit, it
    is tried again in the background (``card_edits.py``)."""
    for channel, ts in cards:
        try:
            await edit_card(client, channel=channel, ts=ts, what=f"note {note.id}",
                            **note_card_message(note, console))
        except SLACK_FAILURES as error:
            log.warning("the card of note %s in %s was not updated: %s", note.id, channel,
                        error)


class NoteDeciders(Protocol):
    @property
    def notes(self) -> NoteGovernance: ...

    @property
    def audit(self) -> AuditLog: ...


def decided(stores: NoteDeciders, note_id: str, *, keep: bool, by: str, actor: str,
            origin: str) -> Note:
    """Keep or reject a note, written to the audit log only when this decided it (a
    second founder's click on a note decided already changes nothing). In a thread."""
    before = stores.notes.store.get(note_id)
    note = stores.notes.decide(note_id, keep=keep, by=by)
    if before is not None and before.status == "proposed" and note.status != "proposed":
        stores.audit.record(actor=actor, action=f"note.{'keep' if keep else 'reject'}",
                            target=f"note:{note_id}", origin=origin)
    return note
