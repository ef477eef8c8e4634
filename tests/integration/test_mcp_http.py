"""MCP over streamable HTTP in a real `thoth serve` (HTTP mode, a subprocess, against the
loopback Slack), driven by the SDK's own client with each person's bearer token: what
each token may read (their DMs, public channels, and the private channels Slack says they
are in), a request without a token or with a revoked one refused at once, and notes
proposed only where the token's person may write."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from bridge.all_tables import ALL_SCHEMAS
from bridge.cli.main import main
from layers.shared.audit.log import AuditLog
from layers.shared.storage.engines import open_sqlite
from tests.servers.slack_api import FakeSlack

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
LAUNCH = [
    ("dm-u1", "The launch codename is Bluebird, keep it quiet", "D1", "im", "U1"),
    ("dm-u2", "The launch codename is Redwing, only between us", "D2", "im", "U2"),
    ("public", "The launch is on March 3rd, announced in general", "C1", "public", "U2"),
    ("private", "The launch budget is forty thousand", "G1", "private", "U1"),
]


def _thoth(home: Path, *args: str) -> str:
    out = io.StringIO()
    assert os.environ["THOTH_HOME"] == str(home)
    assert main(list(args), stdout=out, stderr=out) == 0, out.getvalue()
    return out.getvalue()


@pytest.fixture
def served(isolated_environment: Path, tmp_path: Path) -> Iterator[tuple[str, FakeSlack]]:
    home = isolated_environment
    lines = [{"id": episode_id, "user_text": text, "summary": "", "team": "T1",
              "channel": channel, "channel_type": kind, "user": user, "user_name": user,
              "created_at": "2026-11-20T10:00:00+00:00"}
             for episode_id, text, channel, kind, user in LAUNCH]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _thoth(home, "episodes", "import", str(episodes))
    with FakeSlack() as slack:
        for user, name in (("U1", "dana"), ("U2", "ari")):
            slack.add_user(user, name)
        slack.add_channel("C1", "general")
        slack.add_channel("G1", "budget", "private", members=["UBOT", "U1"])
        # isolated_environment took every outside service's variable out already.
        env = {**os.environ, "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
               "SLACK_API_URL": slack.url}
        serve = subprocess.Popen(
            [sys.executable, "-m", "bridge", "serve", "--host", "127.0.0.1", "--port", "0"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert serve.stdout is not None
            first = serve.stdout.readline()
            assert "listens on" in first, (first, serve.stderr.read() if serve.stderr else "")
            base = first.strip().split()[-1].removesuffix("/slack/events")
            # The startup lines say which way into /mcp is offered: no OAuth here.
            lines = [serve.stdout.readline() for _ in range(2)]
            (mcp_line,) = [line for line in lines if line.startswith("MCP for coding")]
            assert f"{base}/mcp" in mcp_line and "/thoth token" in mcp_line
            assert "no sign-in with Slack" in mcp_line
            yield base + "/mcp", slack
        finally:
            serve.terminate()
            serve.wait(timeout=30)


def _token_for(home: Path, user: str) -> tuple[str, str]:
    printed = _thoth(home, "tokens", "make", "--team", "T1", "--user", user,
                     "--label", f"{user}'s laptop").splitlines()
    return printed[0].split()[1], printed[1]


@pytest.fixture
def tokens(served: tuple[str, FakeSlack], isolated_environment: Path) -> dict[str, tuple[str, str]]:
    """U1's and U2's tokens for the served home, made by the operator: (id, token)."""
    return {user: _token_for(isolated_environment, user) for user in ("U1", "U2")}


async def _calls(url: str, token: str | None,
                 calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def _ids(result: Any) -> set[str]:
    assert not result.is_error, result.content
    return {hit["id"] for hit in result.structured_content["result"]}


def _status(url: str, token: str | None) -> int:
    request = urllib.request.Request(
        url, method="POST", data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        headers={"content-type": "application/json",
                 "accept": "application/json, text/event-stream",
                 **({"authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_each_token_reads_what_its_person_may_and_a_revoked_one_is_refused_at_once(
    served: tuple[str, FakeSlack], tokens: dict[str, tuple[str, str]],
    isolated_environment: Path,
) -> None:
    url, _ = served
    home = isolated_environment
    (u1_id, u1), (_, u2) = tokens["U1"], tokens["U2"]
    query = {"query": "what is the launch codename and budget?", "k": 10}

    (mine,) = asyncio.run(_calls(url, u1, [("recall", query)]))
    (theirs,) = asyncio.run(_calls(url, u2, [("recall", query)]))
    # U1 is in the private channel G1 (Slack says so): its memory is theirs to read.
    assert _ids(mine) == {"dm-u1", "public", "private"}
    # U2 is not in it, and never reads U1's DM.
    assert _ids(theirs) == {"dm-u2", "public"}

    # Any replica answers any request: no session to find first (deploy/Caddyfile
    # spreads requests round robin). A bare call, as a client's next request would land.
    bare = httpx2.post(url, headers={
        "Authorization": f"Bearer {u2}", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18"}, json={
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "recall", "arguments": query}}, timeout=30)
    assert bare.status_code == 200, bare.text
    answered = bare.json()["result"]["structuredContent"]["result"]
    assert {hit["id"] for hit in answered} == {"dm-u2", "public"}

    # No token, an unknown one: refused before any MCP is spoken.
    assert _status(url, None) == 401
    assert _status(url, "thoth_mcp_" + "x" * 43) == 401
    assert _status(url, u1) != 401

    _thoth(home, "tokens", "revoke", u1_id)
    assert _status(url, u1) == 401
    # The SDK's client meets the 401 as an error response, inside its task groups.
    with pytest.raises(ExceptionGroup) as refused:
        asyncio.run(_calls(url, u1, [("recall", query)]))
    assert refused.group_contains(MCPError, depth=2)
    (still,) = asyncio.run(_calls(url, u2, [("recall", query)]))
    assert _ids(still) == {"dm-u2", "public"}

    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    entries = [(e.actor, e.action, e.origin) for e in AuditLog(db).entries(action="mcp")]
    db.close()
    assert ("slack:U1", "mcp.recall", "mcp http") in entries
    assert ("slack:U2", "mcp.recall", "mcp http") in entries


def test_a_note_goes_only_where_the_tokens_person_may_write(
    served: tuple[str, FakeSlack], tokens: dict[str, tuple[str, str]],
) -> None:
    url, slack = served
    (_, u1), (_, u2) = tokens["U1"], tokens["U2"]
    (in_private,) = asyncio.run(_calls(url, u1, [
        ("remember", {"text": "Budget reviews are on Mondays", "where": "G1"})]))
    (not_a_member,) = asyncio.run(_calls(url, u2, [
        ("remember", {"text": "Budget reviews are on Fridays", "where": "G1"})]))

    assert not in_private.is_error, in_private.content
    assert in_private.structured_content["where"] == "#G1"
    assert not_a_member.is_error
    assert "G1 is not a channel you may write to" in not_a_member.content[0].text
    # The note's card waits for a founder in the private channel itself.
    assert any("Budget reviews are on Mondays" in str(message.get("text"))
               for message in slack.messages("G1"))


def test_a_request_without_a_token_is_told_how_to_get_one(
    served: tuple[str, FakeSlack],
) -> None:
    url, _ = served
    # As a client's first request: no Authorization at all, then one no one made.
    for headers in ({}, {"Authorization": "Bearer thoth_mcp_" + "x" * 43}):
        refused = httpx2.post(url, headers={
            **headers, "Accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, timeout=30)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith('Bearer error="invalid_token", error_description="')
        assert "/thoth token in a DM with Thoth" in challenge
        assert "thoth tokens make" in challenge
        # No OAuth here: nowhere to be sent to sign in.
        assert "resource_metadata" not in challenge and "sign in with Slack" not in challenge
        body = refused.json()
        assert body["error"] == "invalid_token"
        assert "/thoth token in a DM with Thoth" in body["error_description"]
        assert int(refused.headers["content-length"]) == len(refused.content)
