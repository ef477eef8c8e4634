"""Which identity facts a reader may see: DESIGN.md's rule, applied to facts about a person.

A fact remembers the session it came from, and so the place. Read about person P by a
viewer V (the turn's place and speaker), a fact learned in
- a public channel is visible anywhere in the same workspace;
- a private channel or a group DM only in that channel;
- a DM (with P) only in a DM with P;
and nothing crosses workspaces. A channel shared across an Enterprise Grid org's
workspaces is the org's place: what was learned there about the person (known under the
org's id) is read in that channel, and by them where their view lists the channel
(``Viewer.org_channels``: the console, MCP). A fact with no session (typed in by hand) counts as
said in a DM with P: the narrowest place, never widened by a guess. ``viewer=None``
is the operator's view (``thoth people show --all``, forgetting): everything.
"""

from __future__ import annotations

from layers.identity.protocol import Person
from layers.shared.places import Viewer
from layers.shared.places.visibility import in_org_channels
from layers.shared.storage.database import Database


def session_predicate(
    viewer: Viewer, person: Person, alias: str = "s"
) -> tuple[str, dict[str, str | None]]:
    """A WHERE clause over ``sessions`` (as ``alias``): the places ``viewer`` may read
    facts about ``person`` from (a person is one per workspace: never across)."""
    if viewer.confined:
        # Only what was learned in this very channel (in a DM, with this person).
        return (
            f"{alias}.team = :v_team AND :v_team = :v_person_team"
            f" AND {alias}.channel = :v_channel"
            f" AND ({alias}.channel_type <> 'im' OR :v_user = :v_person)",
            {"v_team": viewer.team, "v_channel": viewer.channel, "v_user": viewer.user,
             "v_person": person.user, "v_person_team": person.team},
        )
    clause = (
        f"{alias}.team = :v_team AND :v_team = :v_person_team AND ("
        f"{alias}.channel_type = 'public'"
        f" OR ({alias}.channel_type IN ('private', 'mpim') AND {alias}.channel = :v_channel)"
        f" OR ({alias}.channel_type = 'im' AND :v_type = 'im' AND :v_user = :v_person))"
    )
    params: dict[str, str | None] = {
        "v_team": viewer.team,
        "v_channel": viewer.channel,
        "v_type": viewer.channel_type,
        "v_user": viewer.user,
        "v_person": person.user,
        "v_person_team": person.team,
    }
    org = in_org_channels(viewer, alias, also=" AND :v_org = :v_person_team")
    if org is not None:
        clause, params = f"(({clause}) OR {org[0]})", params | org[1]
    return clause, params


def unplaced_visible(viewer: Viewer, person: Person) -> bool:
    """Whether a fact with no known place (no session) may be read by ``viewer``."""
    return (
        viewer.team == person.team and viewer.channel_type == "im" and viewer.user == person.user
    )


class ReadableSessions:
    """The sessions whose facts about a person a reader may see, from the sessions table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def __call__(self, person: Person, viewer: Viewer, *, limit: int) -> list[str]:
        """Ids of sessions ``person`` spoke in, readable by ``viewer``, most recent first."""
        predicate, params = session_predicate(viewer, person)
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT s.id FROM sessions s WHERE {predicate} AND EXISTS (SELECT 1 FROM"
                ' transcript_turns t WHERE t.session_id = s.id AND t."user" = :v_person)'
                " ORDER BY s.last_turn_at DESC LIMIT :limit",
                {**params, "limit": limit},
            ).fetchall()
        return [str(row[0]) for row in rows]
