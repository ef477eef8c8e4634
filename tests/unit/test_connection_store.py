"""People's connections kept sealed (bridge/connections/store.py): no token, verifier or
client secret in clear in the database, each opened again, sealed anew under a rotated
key; a sign-in under way taken once."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from bridge.connections.store import ConnectionStore, Registration, Start, Tokens
from bridge.connections.tables import SCHEMA
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from layers.shared.token_cipher import TokenCipher

ACCESS, REFRESH, VERIFIER, SECRET = "at-abc123", "rt-def456", "v" * 64, "client-s3cret"


def _start(state: str = "state-1") -> Start:
    return Start(state, "T1", "U1", "tracker", "ask-1", VERIFIER, "client-1",
                 "https://auth.example", "https://mcp.example/mcp",
                 "https://auth.example/token", "https://auth.example/revoke",
                 "https://thoth.example/console/connections/callback", time.time() + 60)


def _everything_stored(db: Database) -> str:
    with db.read() as conn:
        rows = [row for table in ("connections", "connection_starts", "connection_clients")
                for row in conn.execute(f"SELECT * FROM {table}").fetchall()]
    return repr(rows)


def test_secrets_are_sealed_opened_and_resealed_under_a_new_key(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    db = open_database([SCHEMA])
    old_key, new_key = TokenCipher.new_key(), TokenCipher.new_key()
    store = ConnectionStore(db, TokenCipher([old_key]))
    store.register("tracker", "https://auth.example", "https://thoth.example/cb",
                   Registration("client-1", SECRET, "client_secret_post"))
    store.begin(_start())
    store.connect(_start(), Tokens(ACCESS, REFRESH, "mcp", time.time() + 3600))

    stored = _everything_stored(db)
    for secret in (ACCESS, REFRESH, VERIFIER, SECRET):
        assert secret not in stored

    # Rotated: the new key first, the old one after it; resealed; then the old dropped.
    assert ConnectionStore(db, TokenCipher([new_key, old_key])).reseal() == 3
    rotated = ConnectionStore(db, TokenCipher([new_key]))
    kept = rotated.tokens("T1", "U1", "tracker")
    assert kept is not None and (kept.access, kept.refresh) == (ACCESS, REFRESH)
    registered = rotated.registration("tracker", "https://auth.example",
                                      "https://thoth.example/cb")
    assert registered is not None and registered.client_secret == SECRET
    assert rotated.take_start("state-1", "T1", "U2") is None  # only its own person
    taken = rotated.take_start("state-1", "T1", "U1")
    assert taken is not None and taken.verifier == VERIFIER
    assert rotated.take_start("state-1", "T1", "U1") is None  # once


def test_the_operator_sees_counts_and_a_person_only_their_own(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    store = ConnectionStore(open_database([SCHEMA]), TokenCipher([TokenCipher.new_key()]))
    for user in ("U1", "U2"):
        start = _start()
        store.connect(Start(**{**start.__dict__, "user": user}), Tokens(ACCESS, None, None, None))
    assert store.people_by_server() == {"tracker": 2}
    assert [c.user for c in store.of_person("T1", "U1")] == ["U1"]
    assert store.remove("T1", "U1", "tracker") and not store.remove("T1", "U1", "tracker")
    assert store.people_by_server() == {"tracker": 1}
