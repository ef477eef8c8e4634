"""The SQLite store: migrations, WAL, and durability across a killed process."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from bridge.all_tables import ALL_SCHEMAS
from layers.shared.errors import ConfigurationError
from layers.shared.storage.engines import connect_postgres, open_sqlite
from layers.shared.storage.migrations import LEGACY_VERSIONS, Migration, Schema
from tests.postgres import PostgresForTests


def test_migrations_run_once_and_are_recorded_by_their_owner(tmp_path: Path) -> None:
    db = open_sqlite(tmp_path / "thoth.db", schemas=ALL_SCHEMAS)
    assert db.applied() == {
        (schema.owner, m.version) for schema in ALL_SCHEMAS for m in schema.migrations
    }
    db.close()
    # An owner adds its next migration in its own schema; nothing else changes.
    slack = next(schema for schema in ALL_SCHEMAS if schema.owner == "slack")
    grown = Schema("slack", (*slack.migrations, Migration(len(slack.migrations) + 1, "notes",
                                                          "CREATE TABLE slack_notes (body TEXT);")))
    schemas = tuple(grown if schema.owner == "slack" else schema for schema in ALL_SCHEMAS)
    db = open_sqlite(tmp_path / "thoth.db", schemas=schemas)
    assert ("slack", len(grown.migrations)) in db.applied()
    with db.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = [row[0] for row in conn.execute(
            "SELECT name FROM schema_migrations WHERE owner = 'slack' ORDER BY version")]
        conn.execute("INSERT INTO slack_notes VALUES ('x')")
    assert names == [m.name for m in grown.migrations]


def test_a_schema_numbers_its_migrations_from_one_in_order() -> None:
    with pytest.raises(ValueError, match="numbered"):
        Schema("x", (Migration(2, "b", "SELECT 1;"),))


def test_a_database_recorded_in_one_sequence_keeps_its_tables_and_runs_nothing_twice(
    tmp_path: Path,
) -> None:
    """A database made before owners declared their schemas (versions 1-8 in one table)."""
    path = tmp_path / "thoth.db"
    legacy = sqlite3.connect(path)
    by_owner = {schema.owner: schema for schema in ALL_SCHEMAS}
    for version, parts in sorted(LEGACY_VERSIONS.items()):
        for owner, owned_version, _ in parts:
            shipped = by_owner[owner].migrations[owned_version - 1]
            legacy.executescript(shipped.text_for("sqlite") or "")
        legacy.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY"
                       " KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)")
        legacy.execute("INSERT INTO schema_migrations VALUES (?, ?, 1.0)", (version, "old"))
    legacy.execute("INSERT INTO sessions VALUES ('s1', 'k', 't', 'c', 'im', NULL, 1, 1, NULL)")
    legacy.commit()
    legacy.close()
    # Running a CREATE TABLE again would fail: every migration must be seen as applied.
    db = open_sqlite(path, schemas=ALL_SCHEMAS)
    assert db.applied() == {
        (schema.owner, m.version) for schema in ALL_SCHEMAS for m in schema.migrations
    }
    with db.read() as conn:
        assert conn.execute("SELECT id FROM sessions").fetchall() == [("s1",)]
        applied_at = dict(((owner, version), at) for owner, version, at in conn.execute(
            "SELECT owner, version, applied_at FROM schema_migrations"))
    legacy_parts = {(owner, v) for parts in LEGACY_VERSIONS.values() for owner, v, _ in parts}
    # Recorded in the old table: adopted as they were. Migrations added since: run now.
    assert {key for key, at in applied_at.items() if at == 1.0} == legacy_parts


def test_a_failed_write_rolls_back(tmp_path: Path) -> None:
    db = open_sqlite(tmp_path / "thoth.db", schemas=ALL_SCHEMAS)
    with pytest.raises(RuntimeError), db.write() as conn:
        conn.execute(
            "INSERT INTO episodes (id, user_text, summary, created_at, team, channel,"
            " channel_type, embedding_model) VALUES ('x', 't', '', 0, 'l', 'l', 'public', 'm')"
        )
        raise RuntimeError("boom")
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 0


def test_committed_writes_survive_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "thoth.db"
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from layers.shared.storage.engines import open_sqlite
        from bridge.all_tables import ALL_SCHEMAS
        db = open_sqlite(Path({str(path)!r}), schemas=ALL_SCHEMAS)
        for i in range(3):
            # The last without waiting for the disk: a killed process keeps it too.
            with db.write(durable=i < 2) as conn:
                conn.execute(
                    "INSERT INTO episodes (id, user_text, summary, created_at, team, channel,"
                    " channel_type, embedding_model)"
                    " VALUES (?, 't', '', 0, 'l', 'l', 'public', 'm')",
                    (f"turn-{{i}}",),
                )
        # Every other write waits for the disk again (2: FULL).
        with db.read() as conn:
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        print("written", flush=True)
        sys.stdin.read()  # hold still until killed
        """
    )
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "written"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    db = open_sqlite(path, schemas=ALL_SCHEMAS)
    with db.read() as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM episodes ORDER BY id")]
    assert ids == ["turn-0", "turn-1", "turn-2"]


def test_unwritable_home_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigurationError, match="THOTH_HOME"):
        open_sqlite(blocker / "home" / "thoth.db", schemas=ALL_SCHEMAS)


def test_a_database_from_a_newer_thoth_is_refused_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "thoth.db"
    legacy = sqlite3.connect(path)
    legacy.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,"
                   " name TEXT NOT NULL, applied_at REAL NOT NULL)")
    legacy.executemany("INSERT INTO schema_migrations VALUES (?, 'x', 1.0)", [(1,), (99,)])
    legacy.commit()
    legacy.close()
    with pytest.raises(ConfigurationError, match=r"\[99\].*newer Thoth"):
        open_sqlite(path, schemas=ALL_SCHEMAS)
    check = sqlite3.connect(path)
    assert check.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall() == [
        (1,), (99,)
    ]
    check.close()


def test_a_postgresql_without_pgvector_is_one_line_that_says_the_fix(
    postgres: PostgresForTests,
) -> None:
    # A database the administrator made, and a role that may not install extensions
    # (pgvector is not a trusted extension): the managed-PostgreSQL case.
    with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE thoth_app LOGIN")
        conn.execute("CREATE DATABASE thoth_app_db OWNER thoth_app")
    url = postgres.url("thoth_app_db").replace("://postgres:@", "://thoth_app:@")
    assert "thoth_app:@" in url
    with pytest.raises(ConfigurationError) as refused:
        connect_postgres(url, schemas=ALL_SCHEMAS)
    message = str(refused.value)
    assert "episodic migration 2 (pgvector_hnsw)" in message
    assert "CREATE EXTENSION vector;" in message and "\n" not in message
    with psycopg.connect(postgres.url("thoth_app_db"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    connect_postgres(url, schemas=ALL_SCHEMAS).close()  # then it goes on where it stopped
