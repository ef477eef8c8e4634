"""Everything Thoth keeps of one Slack workspace, deleted: for a workspace that
uninstalled Thoth (`thoth installations purge --team T`).

Uninstalling deletes the install and its token at once and leaves the workspace's memory,
so that the operator may export it first (`thoth episodes export --team T`). Purging then
deletes it from every layer: the episodes (text, vectors, recall history), the sessions
with their transcripts, reflections and follow-ups, the memory notes (a kept note's line
leaves MEMORY.md, one commit each), what the identity layer knows of each person seen
there (Honcho or the local backend) with their queued turns, the replies Thoth recorded
for reactions, the agent view's contexts, and the org's note of the workspace. The
people's MCP tokens are revoked, not deleted, as a revoked token always is.

Decided: the audit log keeps its rows (it records who did what, this purge included),
and the brain's git history keeps the MEMORY.md lines removed, as it keeps every edit. An
Enterprise Grid channel shared across the org's workspaces is kept under the org's id
(``directory.place_team``): purge the org's id as well to delete it. A workspace still
installed is refused: its memory would start to grow again at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bridge.app import Thoth
from layers.identity.known_as import forget_all_of
from layers.identity.protocol import Person

# Rows of the workspace with nothing else to tidy, deleted after the layers that have.
_TEAM_ROWS = ("followups", "slack_replies", "slack_app_contexts", "identity_outbox",
              "identity_forgotten",
              # People's own connections end at the uninstall (revoked at their servers);
              # any left, and sign-ins and asks under way, go with the rest.
              "connections", "connection_starts", "tool_asks", "tool_grants",
              # Messages waiting for an overloaded model to come back.
              "answer_later")


@dataclass(frozen=True)
class Purged:
    episodes: int
    sessions: int
    notes: int
    people: int
    tokens: int

    def describe(self) -> str:
        return (f"{self.episodes} episodes, {self.sessions} sessions, {self.notes} notes,"
                f" what is known of {self.people} people, {self.tokens} MCP tokens revoked")


def purge_workspace(app: Thoth, team: str, *, by: str, now: float) -> Purged:
    """Delete what Thoth keeps of ``team``; what was deleted."""
    people = _people_of(app, team)
    with app.db.read() as conn:
        sessions = [str(row[0]) for row in conn.execute(
            "SELECT id FROM sessions WHERE team = ?", (team,)).fetchall()]
    # First the identity backend (it may be a server, and may fail): nothing else is
    # gone yet, and the purge can simply run again.
    if app.identity is not None:
        persons = [Person(team, user) for user in people]
        asyncio.run(forget_all_of(app.identity, persons))
        asyncio.run(app.identity.forget_conversations(team, sessions))
        if app.user_models is not None:
            for person in persons:
                app.user_models.forget(person)
    notes = app.notes.purge_team(team, by=by)
    episodes = app.episodic.purge_team(team)
    with app.db.write() as conn:
        for table in ("reflection_writes", "reflections"):
            conn.execute(f"DELETE FROM {table} WHERE session_id IN"
                         " (SELECT id FROM sessions WHERE team = ?)", (team,))
        # Their transcripts go with them (ON DELETE CASCADE).
        conn.execute("DELETE FROM sessions WHERE team = ?", (team,))
        for table in _TEAM_ROWS:
            conn.execute(f"DELETE FROM {table} WHERE team = ?", (team,))
        conn.execute("DELETE FROM slack_org_teams WHERE team_id = ?", (team,))
        tokens = conn.execute(
            "UPDATE mcp_tokens SET revoked_at = ?, revoked_by = ?"
            " WHERE team = ? AND revoked_at IS NULL", (now, by, team)).rowcount
    return Purged(episodes, len(sessions), notes, len(people), int(tokens or 0))


def _people_of(app: Thoth, team: str) -> list[str]:
    """Everyone Thoth may know something of in ``team``: who spoke, and who has facts."""
    with app.db.read() as conn:
        rows = conn.execute(
            'SELECT t."user" FROM transcript_turns t JOIN sessions s ON s.id = t.session_id'
            ' WHERE s.team = ? AND t."user" IS NOT NULL'
            ' UNION SELECT "user" FROM identity_observations WHERE team = ?'
            ' UNION SELECT "user" FROM identity_outbox WHERE team = ?',
            (team, team, team)).fetchall()
    return sorted({str(row[0]) for row in rows})
