"""`thoth mcp` as an MCP client meets it, driven by the SDK's own client over stdio: the
handshake names Thoth's version, errors are one short line, a failed call is audited,
a resource that is not there is the spec's resource-not-found, and the resources list
what there is now."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from bridge.all_tables import ALL_SCHEMAS
from bridge.app import build
from bridge.cli.main import main
from bridge.settings import Settings
from layers.episodic.episode import Episode, EpisodeFile
from layers.notes.store import NoteStore
from layers.shared.audit.log import AuditLog
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.places import Viewer
from layers.shared.storage.engines import open_sqlite

MIB = 1 << 20
# An error may quote what was sent, a short prefix of it: far less than this.
SHORT = 400
# Assembled here so this file holds no literal token (tests/secret_corpus.py's habit).
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
STEPS = "\n".join(f"{n}. Step {n}: write down what was decided and by whom." for n in range(5))


def _home(home: Path) -> None:
    out = io.StringIO()
    assert main(["init"], stdout=out, stderr=out) == 0, out.getvalue()


def _server(home: Path, user: str = "U1") -> StdioServerParameters:
    env = {**os.environ, "THOTH_HOME": str(home)}
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "bridge", "mcp", "--team", "T1", "--user", user],
                                 env=env)


def _text(result: Any) -> str:
    return " ".join(part.text for part in result.content)


async def _calls(home: Path, calls: list[tuple[str, dict[str, Any]]],
                 user: str = "U1") -> list[Any]:
    async with stdio_client(_server(home, user)) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def _audited(home: Path) -> list[tuple[str, str, str, str]]:
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    try:
        return [(e.actor, e.action, e.target, e.detail)
                for e in reversed(AuditLog(db).entries(action="mcp"))]
    finally:
        db.close()


def test_a_refused_call_is_one_short_line_naming_the_argument_and_is_audited(
    isolated_environment: Path,
) -> None:
    home = isolated_environment
    _home(home)
    steps = "1. Write it down.\n" * 10
    (query_number, k_word, text_number, name_list, huge_skill, huge_draft, long_note,
     found, secret_skill) = asyncio.run(_calls(home, [
        ("recall", {"query": 5}),
        ("recall", {"query": "launch", "k": "x"}),
        ("remember", {"text": 5}),
        ("propose_skill", {"name": ["a"], "description": "d", "instructions": steps}),
        ("get_skill", {"name": "a" * MIB}),
        ("propose_skill", {"name": "b" * MIB, "description": "d", "instructions": steps}),
        ("remember", {"text": "Fridays are quiet. " * 16}),
        ("list_skills", {}),
        ("get_skill", {"name": GITHUB_TOKEN}),
    ]))

    # The wrong kind of value: one line naming the argument and what it must be.
    assert _text(query_number) == "Error executing tool recall: query must be text, not a number"
    assert _text(k_word) == ("Error executing tool recall: k must be a whole number from 1"
                             " to 20")
    assert _text(text_number).endswith("text must be text, not a number")
    assert _text(name_list).endswith("name must be text, not a list")
    # A megabyte sent is quoted as its first characters, not handed back whole.
    for refused, letter in ((huge_skill, "a"), (huge_draft, "b")):
        said = _text(refused)
        assert refused.is_error and len(said) < SHORT and "\n" not in said, said[:SHORT]
        assert f"'{letter * 60}…'" in said
    # A note over the limit is refused with the limit, not kept cut short.
    assert long_note.is_error and _text(long_note).endswith(
        "a memory note is at most 300 characters; this one has 303")
    for refused in (query_number, k_word, text_number, name_list, long_note):
        assert refused.is_error and "\n" not in _text(refused)
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    try:
        assert NoteStore(db).listed(None) == []
    finally:
        db.close()

    # Every call is in the audit log, a refused one with why, short and redacted.
    audited = _audited(home)
    assert [action for _, action, _, _ in audited] == [
        "mcp.recall", "mcp.recall", "mcp.remember", "mcp.propose_skill", "mcp.get_skill",
        "mcp.propose_skill", "mcp.remember", "mcp.list_skills", "mcp.get_skill"]
    failed = [entry for entry in audited if entry[2] == "failed"]
    assert len(failed) == 8 and all(actor == "slack:U1" for actor, _, _, _ in failed)
    assert failed[0][3] == "query must be text, not a number"
    assert failed[6][3] == "a memory note is at most 300 characters; this one has 303"
    assert all(len(detail) < SHORT for _, _, _, detail in audited)
    assert GITHUB_TOKEN in _text(secret_skill)  # the asker's own words, back to them
    assert GITHUB_TOKEN not in failed[7][3] and "[REDACTED:github-token]" in failed[7][3]
    assert not found.is_error


async def _resource_session(home: Path, uris: list[str]) -> tuple[str, list[Any]]:
    async with stdio_client(_server(home)) as (read, write), \
            ClientSession(read, write) as session:
        started = await session.initialize()
        read_back: list[Any] = []
        for uri in uris:
            try:
                read_back.append(await session.read_resource(uri))
            except MCPError as error:
                read_back.append(error)
        return started.server_info.version, read_back


def test_the_handshake_names_thoths_version_and_nothing_there_is_resource_not_found(
    isolated_environment: Path,
) -> None:
    home = isolated_environment
    _home(home)
    told, (persona, skill, unknown, long, huge, identity) = asyncio.run(_resource_session(
        home, ["thoth://persona/NOPE.md", "thoth://skills/no-such-skill", "thoth://elsewhere/x",
               "thoth://skills/" + "c" * 5000, "thoth://skills/" + "d" * MIB,
               "thoth://persona/IDENTITY.md"]))

    assert told == version("thoth")
    # The same code for a missing persona file, skill or anything else: the spec's
    # resource-not-found for the version the handshake agreed.
    for missing in (persona, skill, unknown, long, huge):
        assert isinstance(missing, MCPError) and missing.error.code == -32002
    assert "no persona file 'NOPE.md'" in persona.error.message
    assert "no skill 'no-such-skill'" in skill.error.message
    # A long name (or a URI too long to be any resource's) is quoted as its beginning.
    assert f"no skill '{'c' * 60}…'" in long.error.message
    assert huge.error.message.startswith("Unknown resource: thoth://skills/ddd")
    for missing in (long, huge):
        assert len(missing.error.message) < SHORT and len(missing.error.data["uri"]) < SHORT
    assert identity.contents[0].text.strip()
    reads = [(action, target, detail) for _, action, target, detail in _audited(home)]
    assert [(action, target) for action, target, _ in reads] == [
        ("mcp.read_persona", "failed"), ("mcp.read_skill", "failed"),
        ("mcp.read_resource", "failed"), ("mcp.read_skill", "failed"),
        ("mcp.read_resource", "failed"), ("mcp.read_persona", "IDENTITY.md")]
    assert reads[2][2] == "Unknown resource: thoth://elsewhere/x"
    assert all(len(detail) < SHORT for _, _, detail in reads)


async def _listed_around_an_approval(home: Path) -> tuple[list[str], list[str], str]:
    async with stdio_client(_server(home)) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()

        async def skills() -> list[str]:
            return sorted(str(resource.uri) for resource in
                          (await session.list_resources()).resources
                          if str(resource.uri).startswith("thoth://skills/"))

        before = await skills()
        proposed = await session.call_tool("propose_skill", {
            "name": "standup-digest", "description": "Summarise the daily standup.",
            "instructions": STEPS})
        assert not proposed.is_error, proposed.content
        out = io.StringIO()
        # A founder approves it in the terminal while the server runs.
        code = await asyncio.to_thread(main, ["skills", "approve",
                                              proposed.structured_content["id"], "--by", "fia"],
                                       stdout=out, stderr=out)
        assert code == 0, out.getvalue()
        after = await skills()
        new = await session.read_resource("thoth://skills/standup-digest")
        return before, after, new.contents[0].text


async def _modern_missing(home: Path) -> tuple[str | None, MCPError]:
    async with stdio_client(_server(home)) as (read, write), \
            ClientSession(read, write) as session:
        await session.discover()
        try:
            await session.read_resource("thoth://skills/no-such-skill")
        except MCPError as error:
            return session.protocol_version, error
        raise AssertionError("a skill that is not there was read")


def test_from_protocol_2026_07_28_nothing_there_is_invalid_params_as_its_spec_says(
    isolated_environment: Path,
) -> None:
    home = isolated_environment
    _home(home)
    negotiated, missing = asyncio.run(_modern_missing(home))
    assert negotiated == "2026-07-28"
    assert missing.error.code == -32602 and "no skill 'no-such-skill'" in missing.error.message
    assert missing.error.data == {"uri": "thoth://skills/no-such-skill"}


def test_a_skill_approved_while_the_server_runs_is_listed_at_once(
    isolated_environment: Path,
) -> None:
    home = isolated_environment
    _home(home)
    before, after, text = asyncio.run(_listed_around_an_approval(home))
    assert before and "thoth://skills/standup-digest" not in before
    assert after == sorted([*before, "thoth://skills/standup-digest"])
    assert "Summarise the daily standup." in text
    assert ("mcp.read_skill", "standup-digest") in [
        (action, target) for _, action, target, _ in _audited(home)]


SPEC = EpisodeFile(
    "spec.pdf", "pdf", 2048, "application/pdf", "https://acme.slack.com/files/U1/F1/spec.pdf",
    extract="[page 1]\nThe launch deadline is March 14 and the owner is Priya.")
BOARD = EpisodeFile("board.pdf", "pdf", 1024, "application/pdf", None,
                    extract="[page 1]\nThe acquisition closes on April 2 for forty million.")


def test_recall_finds_a_files_extract_and_gives_the_file_only_where_it_was_shared(
    isolated_environment: Path, minilm: MiniLMEmbedder,
) -> None:
    home = isolated_environment
    _home(home)
    app = build(Settings(_env_file=None), embedder=minilm)  # type: ignore[call-arg]
    try:
        # The words asked for are in the files' extracts only: the same words said
        # without the file are the decoy.
        app.episodic.remember([
            Episode("dm-u1", "here is the spec", "", created_at=1_795_000_000.0, team="T1",
                    channel="D1", channel_type="im", user="U1", user_name="U1",
                    files=(SPEC,)),
            Episode("dm-u1-bare", "here is the spec", "", created_at=1_795_000_000.0,
                    team="T1", channel="D1", channel_type="im", user="U1", user_name="U1"),
            Episode("private", "the pack for Thursday", "", created_at=1_795_000_000.0,
                    team="T1", channel="G1", channel_type="private", user="U1",
                    user_name="U1", files=(BOARD,)),
        ])
        # In its own channel, the private file is found by its words.
        in_g1 = app.episodic.recall("when does the acquisition close", Viewer(
            "T1", "G1", "private", "U1"), k=5)
        assert "private" in [hit.episode.id for hit in in_g1]
    finally:
        app.close()

    mine, board = asyncio.run(_calls(home, [
        ("recall", {"query": "when is the launch deadline?"}),
        ("recall", {"query": "when does the acquisition close?"})]))
    (theirs,) = asyncio.run(_calls(home, [("recall", {"query": "when is the launch deadline?"})],
                                   user="U2"))

    found = mine.structured_content["result"]
    assert [hit["id"] for hit in found][:2] == ["dm-u1", "dm-u1-bare"]
    assert found[1]["files"] == []
    (spec,) = found[0]["files"]
    assert {key: spec[key] for key in ("name", "kind", "type", "permalink")} == {
        "name": "spec.pdf", "kind": "pdf", "type": "application/pdf",
        "permalink": "https://acme.slack.com/files/U1/F1/spec.pdf"}
    assert "The launch deadline is March 14 and the owner is Priya." in spec["passage"]
    assert "March 14" in _text(mine)  # the text content is the same data, as JSON
    # A private channel's file is not read from U1's DM over stdio (no Slack to vouch for
    # the membership), and U1's DM is not read by U2.
    assert "private" not in [hit["id"] for hit in board.structured_content["result"]]
    assert "forty million" not in _text(board)
    assert "dm-u1" not in [hit["id"] for hit in theirs.structured_content["result"]]
    assert "March 14" not in _text(theirs)
