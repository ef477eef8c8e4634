"""The identity layer's one small interface, and the values that cross it.

Two implementations: Honcho (``honcho.py``) and the local SQLite backend
(``local/backend.py``). Every method may be slow or fail; callers put the user
model under a deadline and ingest in the background (``ingest_queue.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from layers.shared.places import Viewer


@dataclass(frozen=True)
class Person:
    """A human in a workspace (Slack ids are per workspace)."""

    team: str
    user: str
    name: str | None = None

    @property
    def key(self) -> str:
        return f"{self.team}:{self.user}"


@dataclass(frozen=True)
class TurnMessages:
    """What identity learns from: one human message and the agent's reply to it."""

    person: Person
    session_id: str
    user_text: str
    reply_text: str
    at: float
    # A second try of a turn the backend may already hold (the first timed out).
    retry: bool = False


@dataclass(frozen=True)
class Fact:
    """One thing known about a person, as stored (ids are the backend's own)."""

    id: str
    text: str
    at: float
    source: str
    # The session it was learned in (its place); None for a fact typed in by hand.
    session_id: str | None = None


@dataclass(frozen=True)
class Forgotten:
    """What "forget me" deleted."""

    facts: int
    conversations: int = 0  # conversations they had alone with the agent, messages and all
    conversations_kept: int = 0  # shared with others: their words are not only theirs
    # The backend may still draw facts from their earlier words this long (tombstones.py).
    settle_s: float = 0.0

    def __add__(self, other: Forgotten) -> Forgotten:
        return Forgotten(self.facts + other.facts, self.conversations + other.conversations,
                         self.conversations_kept + other.conversations_kept,
                         max(self.settle_s, other.settle_s))

    def describe(self) -> str:
        said = f"deleted {self.facts} fact(s)"
        if self.conversations:
            said += f" and {self.conversations} conversation(s) they had alone with Thoth"
        if self.conversations_kept:
            said += (
                f"; {self.conversations_kept} conversation(s) with other people keep their"
                " messages (the identity backend cannot delete one person's messages)"
            )
        if self.settle_s > 0:
            said += (
                f"; facts drawn late from what they said before are swept in"
                f" {self.settle_s / 60:.0f} min, and what they say until then waits"
            )
        return said


class IdentityBackend(Protocol):
    name: str
    # How long after a forget the backend may still derive facts from what was said
    # before it (0: it derives nothing later); see tombstones.py.
    settle_s: float

    async def ingest(self, turn: TurnMessages) -> None:
        """Learn from a turn (the person's own words only, never the agent's paraphrase)."""
        ...

    async def user_model(self, person: Person, message: str, viewer: Viewer) -> str | None:
        """What to know about ``person`` to answer ``message`` well, as a short block,
        from facts ``viewer`` may read (``scope.py``)."""
        ...

    async def observe(
        self, person: Person, observations: list[str], *, session_id: str | None, source: str
    ) -> list[str]:
        """Add explicit observations (from reflection or the 👤 reaction); returns the ids
        of the facts this call made (none for one already known)."""
        ...

    async def facts(self, person: Person, viewer: Viewer | None = None) -> list[Fact]:
        """What is known about ``person`` that ``viewer`` may read ("what do you know
        about me?"); ``None``: everything (the operator's view)."""
        ...

    async def forget(self, person: Person, fact_id: str | None = None) -> int:
        """Delete one fact, or every fact about the person; returns how many."""
        ...

    async def forget_person(self, person: Person) -> Forgotten:
        """"Forget me": every fact, and what they said where the backend keeps it."""
        ...

    async def forget_conversations(self, team: str, session_ids: Sequence[str]) -> int:
        """A workspace that left: delete its conversations where the backend keeps them
        (their messages, and what was drawn from them); returns how many."""
        ...

    async def sweep(self, person: Person, since: float) -> int:
        """Delete facts about ``person`` made after ``since`` (their forget): drawn late
        from what they said before it. Returns how many."""
        ...

    async def warm_up(self, team: str) -> None:
        """Open the way to the backend before the first turn (its first lookup is slow)."""
        ...

    async def check(self) -> str:
        """Reach the backend once (for `thoth doctor`); raises if it cannot be reached."""
        ...
