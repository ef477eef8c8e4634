"""`thoth mcp` over stdio, driven by the MCP SDK's own client as Claude Code or Cursor
would start it: each tool, what each asker may read, the protocol's errors, the audit."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from bridge.all_tables import ALL_SCHEMAS
from bridge.cli.main import main
from layers.identity.local.backend import LocalIdentity
from layers.identity.protocol import Person
from layers.notes.store import NoteStore
from layers.procedural.skills import split_front_matter
from layers.shared.audit.log import AuditLog
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.places import Viewer
from layers.shared.storage.engines import open_sqlite

LAUNCH = [
    # U1's own DM with Thoth, U2's, a public channel, a private channel, another workspace.
    ("dm-u1", "The launch codename is Bluebird, keep it quiet", "T1", "D1", "im", "U1"),
    ("dm-u2", "The launch codename is Redwing, only between us", "T1", "D2", "im", "U2"),
    ("public", "The launch is on March 3rd, announced in general", "T1", "C1", "public", "U2"),
    ("private", "The launch budget is forty thousand", "T1", "G1", "private", "U1"),
    ("elsewhere", "The launch codename is Greyhound", "T2", "C9", "public", "U7"),
]


def _seed(home: Path, tmp_path: Path) -> None:
    lines = [
        {"id": episode_id, "user_text": text, "summary": "", "team": team,
         "channel": channel, "channel_type": kind, "user": user, "user_name": user,
         "created_at": "2026-11-20T10:00:00+00:00"}
        for episode_id, text, team, channel, kind, user in LAUNCH
    ]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = io.StringIO()
    assert main(["episodes", "import", str(episodes)], stdout=out, stderr=out) == 0, (
        out.getvalue())
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    identity = LocalIdentity(db, MiniLMEmbedder())
    asyncio.run(identity.observe(Person("T1", "U1"), ["prefers tea to coffee"],
                                 session_id=None, source="test"))
    asyncio.run(identity.observe(Person("T1", "U2"), ["is allergic to peanuts"],
                                 session_id=None, source="test"))
    db.close()


def _server(home: Path, *asker: str, **settings: str) -> StdioServerParameters:
    """``settings``: environment variables of the test's own (a Slack to talk to)."""
    # isolated_environment took every outside service's variable out already.
    env = {**os.environ, "THOTH_HOME": str(home), **settings}
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "bridge", "mcp", *asker], env=env)


async def _session_calls(params: StdioServerParameters,
                         calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    results = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        results.append(sorted(tool.name for tool in (await session.list_tools()).tools))
        for name, arguments in calls:
            results.append(await session.call_tool(name, arguments))
    return results


def _structured(result: Any) -> Any:
    assert not result.is_error, result.content
    # The SDK wraps a tool's list or string as {"result": …}; an object comes as itself.
    content = result.structured_content
    return content["result"] if set(content) == {"result"} else content


def _text(result: Any) -> str:
    return " ".join(part.text for part in result.content)


def test_each_tool_reads_as_its_asker_may_and_bad_input_is_one_clear_error(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    home = isolated_environment
    _seed(home, tmp_path)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"query": "what is the launch codename?", "k": 10}),
        ("what_do_you_know_about_me", {}),
        ("list_skills", {}),
        ("recall", {"query": "   "}),
        ("recall", {"query": "launch", "k": 500}),
        ("get_skill", {"name": "no-such-skill"}),
        ("recall", {}),
        ("forget_everything", {}),
    ]
    tools, found, about_me, skills, empty, too_many, no_skill, missing, unknown = (
        asyncio.run(_session_calls(_server(home, "--team", "T1", "--user", "U1"), calls)))

    assert tools == ["get_skill", "list_skills", "propose_skill", "recall", "remember",
                     "what_do_you_know_about_me"]
    # U1 reads their own DM and the public channel: never U2's DM, nor another
    # workspace, nor (over stdio, with no Slack to ask) a private channel.
    results = _structured(found)
    assert {result["id"] for result in results} == {"dm-u1", "public"}
    mine = next(result for result in results if result["id"] == "dm-u1")
    assert mine["where"] == "a DM with Thoth" and mine["said_by"] == "U1"
    assert mine["when"] == "2026-11-20T10:00:00+00:00"
    assert [fact["fact"] for fact in _structured(about_me)] == ["prefers tea to coffee"]
    shipped = {skill["name"] for skill in _structured(skills)}
    assert shipped  # the brain's skills, as `thoth skills list` shows them

    assert empty.is_error and _text(empty) == "Error executing tool recall: the query is empty"
    assert too_many.is_error and "k must be a whole number from 1 to 20" in _text(too_many)
    assert no_skill.is_error and "no skill 'no-such-skill'" in _text(no_skill)
    assert missing.is_error and "query" in _text(missing)
    assert unknown.is_error and "forget_everything" in _text(unknown)

    # U2 over the same home: their DM, not U1's; their own facts only.
    _, theirs, their_facts = asyncio.run(_session_calls(
        _server(home, "--team", "T1", "--user", "U2"),
        [("recall", {"query": "what is the launch codename?", "k": 10}),
         ("what_do_you_know_about_me", {})]))
    assert {result["id"] for result in _structured(theirs)} == {"dm-u2", "public"}
    assert [fact["fact"] for fact in _structured(their_facts)] == ["is allergic to peanuts"]

    # Every call of Thoth's tools is in the audit log, with who asked; a refused one
    # with why.
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    entries = AuditLog(db).entries(action="mcp")
    db.close()
    asked = [(entry.actor, entry.action) for entry in reversed(entries)]
    assert asked == [("slack:U1", "mcp.recall"), ("slack:U1", "mcp.about_me"),
                     ("slack:U1", "mcp.list_skills"), ("slack:U1", "mcp.recall"),
                     ("slack:U1", "mcp.recall"), ("slack:U1", "mcp.get_skill"),
                     ("slack:U1", "mcp.recall"), ("slack:U2", "mcp.recall"),
                     ("slack:U2", "mcp.about_me")]
    refused = [(entry.target, entry.detail) for entry in reversed(entries)][3:7]
    assert refused[0] == ("failed", "the query is empty")
    assert refused[1] == ("failed", "k must be a whole number from 1 to 20")
    assert all(entry.origin == "mcp stdio" for entry in entries)


def test_a_skill_is_read_whole_and_the_terminal_user_is_the_default_asker(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    home = isolated_environment
    _seed(home, tmp_path)
    _, listed, launch = asyncio.run(_session_calls(
        _server(home), [("list_skills", {}), ("recall", {"query": "launch codename"})]))
    # The terminal's user reads the local workspace: none of T1's or T2's memory.
    assert _structured(launch) == []
    first = _structured(listed)[0]
    _, read = asyncio.run(_session_calls(_server(home),
                                         [("get_skill", {"name": first["name"]})]))
    front, body = split_front_matter(_structured(read))
    assert front == {"name": first["name"], "description": first["description"]}
    assert body


def test_team_without_user_is_refused_with_one_line(isolated_environment: Path) -> None:
    err = io.StringIO()
    assert main(["mcp", "--team", "T1"], stdout=io.StringIO(), stderr=err) == 2
    assert err.getvalue().strip().splitlines() == [
        "error: --team needs --user: the Slack user who asks in that workspace"]



# Assembled here so this file holds no literal token (tests/secret_corpus.py's habit).
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_remember_proposes_a_redacted_note_in_the_askers_dm_that_waits_for_a_founder(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    home = isolated_environment
    _seed(home, tmp_path)
    _, proposed, channel, empty = asyncio.run(_session_calls(
        _server(home, "--team", "T1", "--user", "U1"),
        [("remember", {"text": f"Deploys use the bot key {GITHUB_TOKEN} from the vault"}),
         ("remember", {"text": "Fridays are quiet", "where": "C1"}),
         ("remember", {"text": "   "})]))

    note = _structured(proposed)
    assert note["status"] == "waiting for a founder's approval"
    assert note["where"] == "a DM with Thoth"
    assert GITHUB_TOKEN not in note["text"] and "[REDACTED:github-token]" in note["text"]
    # No Slack configured: nothing can vouch for a channel, so only the DM is offered.
    assert channel.is_error and "no Slack workspace is configured" in _text(channel)
    assert empty.is_error and _text(empty).endswith("a memory note needs some text")

    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    try:
        store = NoteStore(db)
        assert [(n.id, n.status, n.user) for n in store.listed(None)] == [
            (note["id"], "proposed", "U1")]
        # Secrets never reach storage: not the database file, nor its write-ahead log.
        stored = b"".join(path.read_bytes() for path in home.glob("thoth.db*"))
        assert GITHUB_TOKEN.encode() not in stored
        out = io.StringIO()
        assert main(["notes", "approve", note["id"], "--by", "fia"], stdout=out,
                    stderr=out) == 0, out.getvalue()
        # Kept, it is U1's standing memory in any DM of theirs with Thoth, and no one else's.
        assert [n.id for n in store.kept_for(Viewer("T1", "D1", "im", "U1"))] == [note["id"]]
        assert store.kept_for(Viewer("T1", "D2", "im", "U2")) == []
        assert store.kept_for(Viewer("T1", "C1", "public", "U2")) == []
        entries = [(e.actor, e.action, e.target, e.detail)
                   for e in AuditLog(db).entries(action="mcp.remember")]
    finally:
        db.close()
    assert entries[-1] == ("slack:U1", "mcp.remember", f"note:{note['id']}", "proposed")
    # The two refused are there too (newest first), each with why.
    assert [(target, detail) for _, _, target, detail in entries[:2]] == [
        ("failed", "a memory note needs some text"),
        ("failed", "notes go to your DM with Thoth here (where: dm): no Slack workspace is"
         " configured to vouch for a channel")]


async def _resources(params: StdioServerParameters, uris: list[str]) -> tuple[list[str], list[Any]]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = [str(resource.uri) for resource in (await session.list_resources()).resources]
        read_back: list[Any] = []
        for uri in uris:
            try:
                read_back.append(await session.read_resource(uri))
            except MCPError as error:
                read_back.append(error)
        return listed, read_back


def test_the_persona_and_skills_are_resources_without_the_notes_of_any_place(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    home = isolated_environment
    _seed(home, tmp_path)
    # A kept note said in U1's DM: MEMORY.md records it, but no resource may show it.
    _, proposed = asyncio.run(_session_calls(
        _server(home, "--team", "T1", "--user", "U1"),
        [("remember", {"text": "My salary review is on the ninth"})]))
    out = io.StringIO()
    assert main(["notes", "approve", _structured(proposed)["id"], "--by", "fia"],
                stdout=out, stderr=out) == 0, out.getvalue()
    assert "salary review" in (home / "brain" / "persona" / "MEMORY.md").read_text()

    listed, (identity, memory, missing) = asyncio.run(_resources(
        _server(home, "--team", "T1", "--user", "U2"),
        ["thoth://persona/IDENTITY.md", "thoth://persona/MEMORY.md",
         "thoth://skills/no-such-skill"]))

    assert "thoth://persona/IDENTITY.md" in listed
    skills = sorted(uri for uri in listed if uri.startswith("thoth://skills/"))
    assert skills, listed
    assert identity.contents[0].text.strip()
    assert "salary review" not in memory.contents[0].text
    assert isinstance(missing, MCPError) and "no skill 'no-such-skill'" in str(missing)

    _, (first_skill,) = asyncio.run(_resources(
        _server(home, "--team", "T1", "--user", "U2"), [skills[0]]))
    front, _ = split_front_matter(first_skill.contents[0].text)
    assert f"thoth://skills/{front['name']}" == skills[0]
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    reads = [(e.actor, e.action, e.target) for e in AuditLog(db).entries(action="mcp")]
    db.close()
    assert ("slack:U2", "mcp.read_persona", "MEMORY.md") in reads
    assert ("slack:U2", "mcp.read_skill", front["name"]) in reads
