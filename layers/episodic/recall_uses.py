"""Who recalled an episode: the access log the console shows beside each memory.

A turn's recall is recorded after its reply, in the background, as one row per episode
put before the model: when, in which session, and where the turn was. An MCP client's
recall is recorded as it answers (``via`` "mcp", the way in as its session), and so is
someone opening the episode's page in the console (``via`` "console"). The console shows
when and where to the operator's view only (the turn may be in a place a member is not
in); a member sees how many turns recalled it. The rows go with their
episode (ON DELETE CASCADE): forgetting an episode forgets where it was used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from layers.shared.places import CHANNEL_TYPES, ChannelType, Place
from layers.shared.storage.database import Database

# The most uses an episode's page lists, newest first.
MOST_SHOWN = 50


@dataclass(frozen=True)
class RecallUse:
    session_id: str
    place: Place
    user: str | None
    recalled_at: float
    # The way in: a turn, an MCP client, the console.
    via: str = "turn"


class RecallUses:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, episode_ids: Sequence[str], use: RecallUse) -> int:
        """One row per episode still stored; returns how many were written."""
        if not episode_ids:
            return 0
        marks = ",".join("?" * len(episode_ids))
        place = use.place
        with self._db.write() as conn:
            return conn.execute(
                "INSERT INTO episode_recalls (episode_rowid, recalled_at, session_id, team,"
                ' channel, channel_type, "user", via)'
                f" SELECT rowid, ?, ?, ?, ?, ?, ?, ? FROM episodes WHERE id IN ({marks})",
                [use.recalled_at, use.session_id, place.team, place.channel,
                 place.channel_type, use.user, use.via, *episode_ids],
            ).rowcount

    def forget_asked_by(self, team: str, user: str) -> int:
        """Delete which of ``user``'s turns recalled what (they asked to be forgotten)."""
        with self._db.write() as conn:
            return int(conn.execute(
                'DELETE FROM episode_recalls WHERE team = ? AND "user" = ?',
                (team, user)).rowcount or 0)

    def of(self, episode_id: str, *, most: int = MOST_SHOWN) -> list[RecallUse]:
        """The turns that recalled ``episode_id``, newest first."""
        with self._db.read() as conn:
            rows = conn.execute(
                'SELECT r.session_id, r.team, r.channel, r.channel_type, r."user",'
                " r.recalled_at, r.via FROM episode_recalls r JOIN episodes e"
                " ON e.rowid = r.episode_rowid WHERE e.id = ?"
                " ORDER BY r.recalled_at DESC LIMIT ?",
                (episode_id, most),
            ).fetchall()
        return [RecallUse(str(row[0]), Place(str(row[1]), str(row[2]), _channel_type(row[3])),
                          None if row[4] is None else str(row[4]), float(row[5]),
                          str(row[6]))
                for row in rows]


def _channel_type(value: object) -> ChannelType:
    return next((kind for kind in CHANNEL_TYPES if kind == value), "public")
