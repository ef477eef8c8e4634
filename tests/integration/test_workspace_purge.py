"""`thoth installations purge --team T --yes` (bridge/workspace_purge.py): a workspace that
uninstalled Thoth, answered in Slack first through the real Bolt app and the loopback
Slack, then purged from every layer while the other workspace keeps all of its memory."""

from __future__ import annotations

import asyncio
import io
import time

from bridge.cli.main import main
from layers.identity.protocol import Person
from layers.procedural.brain import MEMORY_FILE
from tests.integration.installs_harness import Served
from tests.servers import anthropic_api as api
from tests.servers.slack_install import Install
from tests.waiting import wait_until

# Every table that names a workspace, and its column.
TEAM_COLUMNS = {"episodes": "team", "sessions": "team", "memory_notes": "team",
                "followups": "team", "slack_replies": "team", "identity_observations": "team",
                "episode_recalls": "team"}


def _rows_of(served: Served, team: str) -> dict[str, int]:
    with served.thoth.db.read() as conn:
        counts = {table: int(conn.execute(f"SELECT COUNT(*) FROM {table}"
                                          f" WHERE {column} = ?", (team,)).fetchone()[0])
                  for table, column in TEAM_COLUMNS.items()}
        counts["transcript_turns"] = int(conn.execute(
            "SELECT COUNT(*) FROM transcript_turns t JOIN sessions s ON s.id = t.session_id"
            " WHERE s.team = ?", (team,)).fetchone()[0])
        counts["live mcp tokens"] = int(conn.execute(
            "SELECT COUNT(*) FROM mcp_tokens WHERE team = ? AND revoked_at IS NULL",
            (team,)).fetchone()[0])
    return counts


def _remember_in(served: Served, team: str, channel: str, user: str, said: str,
                 ts: str) -> None:
    """A turn in Slack, then the rest of what Thoth keeps of a workspace: a kept note
    (its line in MEMORY.md), an identity fact, a follow-up and an MCP token."""
    thoth = served.thoth
    served.model.push(api.text(f"Noted: {said}."))
    served.mention(team, channel, said, ts, user=user)
    wait_until(lambda: _rows_of(served, team)["episodes"] == 1)
    (session,) = [s for s in thoth.sessions.listed(open_only=True) if s.place.team == team]
    note = thoth.notes.propose(f"{team} note: {said}", session.place, user=user,
                               author_name=user, source="test", session_id=session.id,
                               speakers=[user])
    thoth.notes.decide(note.id, keep=True, by="founder")
    assert thoth.identity is not None
    asyncio.run(thoth.identity.observe(Person(team, user), [f"{user} works on {said}"],
                                       session_id=session.id, source="test"))
    thoth.followups.schedule(session, "check back", due_at=time.time() + 3600, now=time.time())
    thoth.mcp_tokens.make(team, user, label="laptop", made_by=user, origin="test")


def _purge(served: Served, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["installations", "purge", *argv], settings=served.thoth.settings,
                stdout=out, stderr=err, embedder=served.thoth.embedder)
    return code, out.getvalue(), err.getvalue()


def test_a_workspace_that_left_is_purged_from_every_layer_and_the_other_keeps_its_own(
    served: Served,
) -> None:
    served.install(Install("T1", "One"))
    served.install(Install("T2", "Two"))
    _remember_in(served, "T1", "C1", "U1", "the freeze starts Friday", "1700003600.000100")
    _remember_in(served, "T2", "C2", "U2", "our launch is in March", "1700003600.000200")
    before = _rows_of(served, "T2")
    assert all(_rows_of(served, "T1")[table] for table in ("episodes", "sessions",
               "memory_notes", "followups", "slack_replies", "identity_observations",
               "transcript_turns", "live mcp tokens"))
    memory = served.thoth.brain.path / MEMORY_FILE
    assert "T1 note" in memory.read_text() and "T2 note" in memory.read_text()

    # Still installed: refused, one line, nothing deleted.
    code, _, err = _purge(served, "--team", "T1", "--yes")
    assert code == 2 and "still installed in T1" in err
    served.installs.uninstall("T1")
    assert served.event("T1", {"type": "app_uninstalled"}) == 200
    wait_until(lambda: [i.team_id for i in served.installations.listed()] == ["T2"])
    # Without --yes: what it would do, and nothing done.
    code, _, err = _purge(served, "--team", "T1")
    assert code == 2 and "say --yes" in err and _rows_of(served, "T1")["episodes"] == 1

    code, out, _ = _purge(served, "--team", "T1", "--yes")
    assert code == 0 and out.startswith("purged workspace T1: 1 episodes, 1 sessions, 1 notes")
    assert set(_rows_of(served, "T1").values()) == {0}
    assert _rows_of(served, "T2") == before
    assert "T1 note" not in memory.read_text() and "T2 note" in memory.read_text()
    identity = served.thoth.identity
    assert identity is not None
    assert asyncio.run(identity.facts(Person("T1", "U1"))) == []
    assert asyncio.run(identity.facts(Person("T2", "U2")))
    (entry,) = served.thoth.audit.entries(action="workspace.purge")
    assert entry.target == "T1"
