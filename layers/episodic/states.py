"""A memory's life: live, paused or archived, by whom and when.

Paused: recall passes it by — no turn's prompt, no MCP recall, no console search
brings it up — until someone resumes it; it is still listed, and still forgettable.
Archived: passed by the same way, and meant to stay aside (the console lists it as
archived). Decided: a state, not a copy elsewhere: the episode keeps its text, vectors
and place, so resuming is instant and loses nothing; recall drops the held-back episodes
from its candidates (``EpisodicMemory.search``), before it picks the best.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from layers.shared.errors import BadInput
from layers.shared.storage.database import Database

State = Literal["live", "paused", "archived"]
STATES: tuple[State, ...] = ("live", "paused", "archived")


@dataclass(frozen=True)
class EpisodeState:
    state: State
    set_by: str | None = None
    set_at: float | None = None


LIVE = EpisodeState("live")


class EpisodeStates:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def set(self, episode_id: str, state: str, *, by: str) -> bool:
        """Set ``episode_id``'s state; False when there is no such episode."""
        if state not in STATES:
            raise BadInput(f"a memory is {', '.join(STATES)}, not {state[:40]!r}")
        with self._db.write() as conn:
            row = conn.execute("SELECT rowid FROM episodes WHERE id = ?",
                               (episode_id,)).fetchone()
            if row is None:
                return False
            conn.execute("DELETE FROM episode_states WHERE episode_rowid = ?", (row[0],))
            if state != "live":
                conn.execute("INSERT INTO episode_states (episode_rowid, state, set_by, set_at)"
                             " VALUES (?, ?, ?, ?)", (row[0], state, by, self._clock()))
        return True

    def of(self, episode_ids: Sequence[str]) -> dict[str, EpisodeState]:
        """The state of each of ``episode_ids`` that is not live."""
        if not episode_ids:
            return {}
        marks = ",".join("?" * len(episode_ids))
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT e.id, s.state, s.set_by, s.set_at FROM episode_states s"
                f" JOIN episodes e ON e.rowid = s.episode_rowid WHERE e.id IN ({marks})",
                tuple(episode_ids)).fetchall()
        return {str(row[0]): EpisodeState(row[1], str(row[2]), float(row[3])) for row in rows}

    def held_back(self) -> frozenset[int]:
        """The rowids recall passes by (paused or archived): few, read at each recall."""
        with self._db.read() as conn:
            return frozenset(int(row[0]) for row in conn.execute(
                "SELECT episode_rowid FROM episode_states").fetchall())
