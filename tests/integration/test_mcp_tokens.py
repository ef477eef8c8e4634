"""People's MCP tokens on both engines: shown once, kept only as a hash, refused once
revoked, and a person may revoke only their own."""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable, Sequence

import pytest

from bridge.access.tables import SCHEMA
from bridge.access.tokens import TOKEN_PREFIX, McpTokens
from bridge.app import build
from bridge.cli import tokens as tokens_cli
from bridge.cli.redacted_output import RedactedOutput
from bridge.settings import Settings
from layers.shared.audit.log import AuditLog
from layers.shared.audit.tables import SCHEMA as AUDIT
from layers.shared.errors import BadInput
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema


def test_a_token_is_kept_as_a_hash_and_refused_once_revoked(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    db = open_database([AUDIT, SCHEMA])
    clock = iter(float(moment) for moment in range(1000, 2000, 30))
    tokens = McpTokens(db, AuditLog(db), clock=lambda: next(clock))
    made, secret = tokens.make("T1", "U1", label="  laptop   Claude Code ", made_by="fia",
                               origin="test")
    other, other_secret = tokens.make("T1", "U2", label="desk", made_by="fia", origin="test")

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

    with pytest.raises(BadInput, match="no MCP token with the id"):
        tokens.revoke(made.id, by="U2", origin="test", user="U2")  # not theirs
    assert tokens.holder(secret) is not None
    revoked = tokens.revoke(made.id, by="U1", origin="test", user="U1")
    assert revoked.revoked and revoked.revoked_by == "U1"
    assert tokens.holder(secret) is None
    assert tokens.holder(other_secret) is not None
    assert [t.id for t in tokens.listed("T1", "U2")] == [other.id]
    assert [t.id for t in tokens.listed()] == [other.id, made.id]  # newest first


def test_a_token_needs_a_label_and_a_person(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    db = open_database([AUDIT, SCHEMA])
    tokens = McpTokens(db, AuditLog(db))
    with pytest.raises(BadInput, match="label"):
        tokens.make("T1", "U1", label=" ", made_by="fia", origin="test")
    with pytest.raises(BadInput, match="Slack user"):
        tokens.make("T1", "", label="x", made_by="fia", origin="test")
    assert tokens.listed() == []



def test_what_the_cli_prints_of_a_token_keeps_its_id_past_the_redaction(
    settings: Settings,
) -> None:
    """The output is redacted, and "token '<value>'" reads as a secret there: whatever
    random id a token gets, `thoth tokens make` and `revoke` print it whole, and the new
    token once."""
    app = build(settings)
    try:
        for number in range(100):
            printed = io.StringIO()
            made = argparse.Namespace(team="T1", user=f"U{number}", label="laptop")
            assert tokens_cli.run_make(made, app, RedactedOutput(printed)) == 0
            first, secret = printed.getvalue().splitlines()
            token_id = first.split()[1]
            assert app.mcp_tokens.get(token_id) is not None, first
            assert app.mcp_tokens.holder(secret) is not None
            gone = io.StringIO()
            revoked = argparse.Namespace(token_id=token_id)
            assert tokens_cli.run_revoke(revoked, app, RedactedOutput(gone)) == 0
            assert token_id in gone.getvalue(), gone.getvalue()
            with pytest.raises(BadInput) as refused:
                app.mcp_tokens.revoke(token_id + "x", by="fia", origin="test")
            said = io.StringIO()
            RedactedOutput(said).write(str(refused.value))
            assert token_id + "x" in said.getvalue(), said.getvalue()
    finally:
        app.close()
