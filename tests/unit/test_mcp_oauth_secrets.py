"""A registered client's secret, kept as a hash (oauth_grants.py), and the per-address
rate limit before /register and /authorize (rate_limit.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from bridge.access.tables import SCHEMA
from bridge.mcp.oauth_grants import OAuthGrants
from bridge.mcp.rate_limit import PerAddress
from layers.shared.storage.engines import open_sqlite

SECRET = "b" * 64


def _client(client_id: str) -> OAuthClientInformationFull:
    return OAuthClientInformationFull(
        client_id=client_id, client_secret=SECRET, redirect_uris=[AnyUrl("http://localhost/cb")],
        token_endpoint_auth_method="client_secret_post")


def test_a_kept_hash_gives_back_only_the_secret_it_is_the_hash_of(tmp_path: Path) -> None:
    grants = OAuthGrants(open_sqlite(tmp_path / "thoth.db", schemas=[SCHEMA]))
    grants.register(_client("new"))
    kept = "sha256:" + hashlib.sha256(SECRET.encode()).hexdigest()

    found = grants.client("new", frozenset({"wrong", SECRET}))
    assert found is not None and found.client_secret == SECRET
    for presented in (frozenset({kept}), frozenset(), None):
        refused = grants.client("new", presented)
        assert refused is not None and refused.client_secret not in {SECRET, kept}
    assert grants.client("unknown", frozenset({SECRET})) is None


def test_without_the_front_a_secret_is_kept_and_given_back_as_issued(tmp_path: Path) -> None:
    # Where nothing sets the presented secret aside, the SDK must be handed the secret
    # itself, or no confidential client could authenticate.
    grants = OAuthGrants(open_sqlite(tmp_path / "thoth.db", schemas=[SCHEMA]))
    grants.register(_client("plain"), hashed=False)
    for _ in range(2):
        found = grants.client("plain", None)
        assert found is not None and found.client_secret == SECRET
    # Once a front is there, the first read hashes it, and the secret still works.
    fronted = grants.client("plain", frozenset({SECRET}))
    assert fronted is not None and fronted.client_secret == SECRET
    refused = grants.client("plain", None)
    assert refused is not None and refused.client_secret != SECRET


def test_an_address_waits_out_its_window_and_others_are_not_held_up() -> None:
    now = [0.0]
    limit = PerAddress(2, 60.0, clock=lambda: now[0])
    assert [limit.knock("a"), limit.knock("a"), limit.knock("b")] == [0, 0, 0]
    now[0] = 15.5
    assert limit.knock("a") == 45
    assert limit.knock("b") == 0 and limit.knock("b") == 45
    now[0] = 60.0
    assert limit.knock("a") == 0


def test_a_limit_needs_room() -> None:
    with pytest.raises(ValueError, match="limit of 1"):
        PerAddress(0, 60.0)
