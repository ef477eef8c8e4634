"""``<memory-notes>``: the kept notes (layers/notes/) the speaker may read here.

Never a pending note: one waits for its approval before any prompt sees it. A note was
written by a person, so it travels as quoted data (``quoting.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from bridge.pipeline.context import ContextAsk, ContextBlock, tagged
from bridge.pipeline.episodes_block import where_said
from layers.notes.store import Note, NoteStore
from layers.shared.offloaded import Offloaded
from layers.shared.quoting import quoted


class KeptNotes:
    name = "memory-notes"
    step: str | None = None
    first_turn_only = False

    def __init__(self, notes: Offloaded[NoteStore], *, deadline_s: float = 1.0) -> None:
        # A local read: the bound only stops a stuck disk from holding the reply.
        self._notes = notes
        self.deadline_s = deadline_s

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        viewer = ask.turn.viewer
        return notes_block(await self._notes.run(lambda store: store.kept_for(viewer)))


def notes_block(notes: Sequence[Note]) -> ContextBlock | None:
    if not notes:
        return None
    return ContextBlock(KeptNotes.name, tagged(KeptNotes.name, quoted(notes_text(notes))))


def notes_text(notes: Sequence[Note]) -> str:
    """One line a note: when, who asked for it (or which conversation), where, the note."""
    lines = []
    for note in notes:
        day = datetime.fromtimestamp(note.created_at, UTC).date().isoformat()
        where = where_said(note.place.channel_type, note.place.channel)
        who = note.author_name or note.user or note.source
        lines.append(f"- {day}, {who} in {where}: {note.text}")
    return "\n".join(lines)
