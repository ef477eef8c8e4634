"""People's MCP tokens on both engines: shown once, kept only as a hash, refused once
revoked, and a person may revoke only their own."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from bridge.mcp.tables import SCHEMA
from bridge.mcp.tokens import TOKEN_PREFIX, McpTokens
from layers.errors import BadInput
from layers.storage.database import Database
from layers.storage.migrations import Schema


def test_a_token_is_kept_as_a_hash_and_refused_once_revoked(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    db = open_database([SCHEMA])
    clock = iter(float(moment) for moment in range(1000, 2000, 30))
    tokens = McpTokens(db, clock=lambda: next(clock))
    made, secret = tokens.make("T1", "U1", label="  laptop   Claude Code ", made_by="fia")
    other, other_secret = tokens.make("T1", "U2", label="desk", made_by="fia")

    assert secret.startswith(TOKEN_PREFIX) and len(secret) > 50
    assert made.label == "laptop Claude Code"
    with db.read() as conn:
        stored = [str(value) for row in conn.execute("SELECT * FROM mcp_tokens").fetchall()
                  for value in row]
    assert not any(secret in value or other_secret in value for value in stored)

    held = tokens.holder(secret)
    assert held is not None and (held.team, held.user) == ("T1", "U1")
    assert tokens.holder(secret + "x") is None and tokens.holder("not a token") is None
    used = tokens.get(made.id)
    assert used is not None and used.last_used_at is not None

    with pytest.raises(BadInput, match="no token"):
        tokens.revoke(made.id, by="U2", user="U2")  # not theirs
    assert tokens.holder(secret) is not None
    revoked = tokens.revoke(made.id, by="U1", user="U1")
    assert revoked.revoked and revoked.revoked_by == "U1"
    assert tokens.holder(secret) is None
    assert tokens.holder(other_secret) is not None
    assert [t.id for t in tokens.listed("T1", "U2")] == [other.id]
    assert [t.id for t in tokens.listed()] == [other.id, made.id]  # newest first


def test_a_token_needs_a_label_and_a_person(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    tokens = McpTokens(open_database([SCHEMA]))
    with pytest.raises(BadInput, match="label"):
        tokens.make("T1", "U1", label=" ", made_by="fia")
    with pytest.raises(BadInput, match="Slack user"):
        tokens.make("T1", "", label="x", made_by="fia")
    assert tokens.listed() == []
