"""Where reflection's results are shown to people: Slack, or the terminal."""

from __future__ import annotations

from typing import Protocol, TextIO

from layers.notes.store import Note
from layers.procedural.drafts import Draft
from layers.shared.places import Place


class Notifier(Protocol):
    def skill_card(self, draft: Draft, place: Place) -> None:
        """Show a pending skill draft where it can be approved."""
        ...

    def note_card(self, note: Note, place: Place) -> None:
        """Show a proposed memory note where a founder can keep or reject it."""
        ...

    def dm_founder(self, founder: str, text: str) -> None:
        """Tell one founder a persona observation (never applied on its own)."""
        ...

    def summary(self, place: Place, text: str) -> None:
        """The session's closing summary, in its thread."""
        ...


class PrintNotifier:
    """For terminal sessions: everything is printed (``thoth chat`` shows it)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def skill_card(self, draft: Draft, place: Place) -> None:
        print(
            f"Skill draft {draft.id}: {draft.slug} {draft.version} — {draft.description}\n"
            f"  approve: thoth skills approve {draft.id}   reject: thoth skills reject {draft.id}",
            file=self._out,
        )

    def note_card(self, note: Note, place: Place) -> None:
        print(
            f"Memory note {note.id} (waits for a founder): {note.text}\n"
            f"  keep: thoth notes approve {note.id}   reject: thoth notes reject {note.id}",
            file=self._out,
        )

    def dm_founder(self, founder: str, text: str) -> None:
        print(f"For {founder}: {text}", file=self._out)

    def summary(self, place: Place, text: str) -> None:
        print(text, file=self._out)
