"""`thoth migrate --to postgresql://…`: an embedded home copied into a real PostgreSQL,
every row there, proven by counts and checksums, and Thoth working on the copy."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from bridge.all_tables import ALL_SCHEMAS
from bridge.slack.inbox import SlackInbox
from layers.episodic.episode import Episode
from layers.episodic.memory import EpisodicMemory
from layers.episodic.pg_search import PostgresEpisodeSearch
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import Person, TurnMessages
from layers.shared.places import Viewer
from layers.shared.storage.copy_database import (
    CannotCopy,
    CopiedTable,
    check_copy,
    copy_database,
    plan_copy,
)
from layers.shared.storage.database import Database
from layers.shared.storage.engines import connect_postgres, open_sqlite
from layers.shared.storage.leases import Leases
from tests.fakes import HashingEmbedder
from tests.postgres import PostgresForTests, count


def _home_with_rows(path: Path, embedder: HashingEmbedder) -> Database:
    home = open_sqlite(path, schemas=ALL_SCHEMAS)
    EpisodicMemory(home, embedder).remember([
        Episode("e1", "the staging database lives on pelican-db-7", "Noted.", 1_700_000_000.5,
                user="U1", user_name="Dana"),
        # Text PostgreSQL must keep byte for byte: accents, emoji, quotes, a percent.
        Episode("e2", "Zoë's 🚀 launch is \"100%\" on Tuesday", "Good luck.", 1_700_000_100.25,
                channel_type="im", channel="D1", thread_ts="1.2"),
    ])
    SlackInbox(home, owner="replica-a", lease_s=30).take(
        ("event:Ev1",), lane="T1:C1:1.1", kind="message", payload={"text": "hi"}
    )
    IngestOutbox(home).add(TurnMessages(Person("T1", "U1", "dana"), "s1", "I like tea", "Ok.",
                                        3.0))
    Leases(home, owner="replica-a").take("idle-sweep", 600)
    return home


def _counts(url: str, home: Path) -> tuple[dict[str, int], dict[str, int]]:
    tables = ["episodes", "episode_vectors", "slack_inbox", "slack_seen", "identity_outbox",
              "leases"]
    with sqlite3.connect(home) as conn:
        there = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    with psycopg.connect(url) as conn:
        here = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    return there, here


@dataclass
class Move:
    """A home with rows, an empty PostgreSQL at ``url``, and what is to be copied."""

    home: Database
    home_path: Path
    target: Database
    url: str
    tables: list[CopiedTable]


@pytest.fixture
def move(
    tmp_path: Path, postgres: PostgresForTests, hashing_embedder: HashingEmbedder
) -> Iterator[Move]:
    home = _home_with_rows(tmp_path / "thoth.db", hashing_embedder)
    url = postgres.fresh_database()
    target = connect_postgres(url, schemas=ALL_SCHEMAS)
    yield Move(home, tmp_path / "thoth.db", target, url, plan_copy(home, target))
    target.close()
    home.close()


def test_a_home_is_copied_whole_and_thoth_carries_on_there(
    move: Move, hashing_embedder: HashingEmbedder
) -> None:
    home, target, url, tables = move.home, move.target, move.url, move.tables
    names = [table.name for table in tables]
    # Derived and own tables stay behind; parents come before the rows that name them.
    assert "episodes_fts" not in names and "schema_migrations" not in names
    assert names.index("episodes") < names.index("episode_vectors")
    assert names.index("sessions") < names.index("transcript_turns")
    copied: list[int] = []
    copy_database(home, target, tables, replace=False, on_rows=copied.append)

    checks = check_copy(home, target, tables)
    assert all(check.matches for check in checks), [c for c in checks if not c.matches]
    there, here = _counts(url, move.home_path)
    assert here == there and here["episodes"] == 2 and here["episode_vectors"] >= 2
    assert sum(copied) == sum(check.source_rows for check in checks)
    # The HNSW index, dropped for the copy, is there again (built once over every row).
    index = "SELECT count(*) FROM pg_indexes WHERE indexname = 'episode_vectors_embedding'"
    assert count(url, index) == 1

    # The copy is Thoth's memory: found by words (the generated column) and by meaning.
    memory = EpisodicMemory(target, hashing_embedder)
    (hit, *_) = memory.recall("where is pelican-db-7", Viewer(), k=3)
    assert hit.episode.id == "e1" and hit.episode.created_at == 1_700_000_000.5
    with psycopg.connect(url) as conn:
        (text,) = conn.execute("SELECT user_text FROM episodes WHERE id = 'e2'").fetchone()
    assert text == "Zoë's 🚀 launch is \"100%\" on Tuesday"
    # Counters follow the copied ids: new rows get new ones, not a duplicate key.
    memory.remember([Episode("e3", "after the move", "Still here.", 1_700_000_200.0)])
    inbox = SlackInbox(target, owner="replica-b", lease_s=30)
    later = inbox.take(("event:Ev2",), lane="T1:C1:1.1", kind="message", payload={})
    assert later is not None
    # Slack's retry of a delivery the home had seen is still known after the move.
    assert inbox.take(("event:Ev1",), lane="T1:C1:1.1", kind="message", payload={}) is None


def test_a_row_that_differs_is_named_by_its_table(move: Move) -> None:
    copy_database(move.home, move.target, move.tables, replace=False)
    with psycopg.connect(move.url, autocommit=True) as conn:
        conn.execute("UPDATE episodes SET created_at = created_at + 0.001 WHERE id = 'e2'")
    checks = check_copy(move.home, move.target, move.tables)
    assert [check.name for check in checks if not check.matches] == ["episodes"]


def test_a_target_holding_thoth_rows_is_refused_unless_replaced(move: Move) -> None:
    home, target, url, tables = move.home, move.target, move.url, move.tables
    copy_database(home, target, tables, replace=False)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE someone_elses (x int)")
        conn.execute("INSERT INTO someone_elses VALUES (1)")
        conn.execute("DELETE FROM leases")  # a change the refusal must not undo or redo

    refused = r"already holds Thoth data \(episodes \(2 rows\).*--replace"
    with pytest.raises(CannotCopy, match=refused):
        copy_database(home, target, tables, replace=False)
    assert _counts(url, move.home_path)[1]["leases"] == 0  # nothing was written

    copy_database(home, target, tables, replace=True)
    there, here = _counts(url, move.home_path)
    assert here == there  # replaced, not doubled
    # The word counts recall weighs words by were emptied with the rows, then recounted.
    counted = PostgresEpisodeSearch(target).document_counts(["pelican", "launch", "tuesday"])
    assert counted == {"pelican": 1, "launch": 1, "tuesday": 1}
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT x FROM someone_elses").fetchall() == [(1,)]


def test_only_a_sqlite_home_is_copied_and_only_into_postgresql(
    tmp_path: Path, postgres: PostgresForTests
) -> None:
    home = open_sqlite(tmp_path / "thoth.db", schemas=ALL_SCHEMAS)
    other = open_sqlite(tmp_path / "other.db", schemas=ALL_SCHEMAS)
    with pytest.raises(CannotCopy, match="to PostgreSQL"):
        plan_copy(home, other)
    behind = connect_postgres(postgres.fresh_database(), schemas=ALL_SCHEMAS[:1])
    with pytest.raises(CannotCopy, match="different migrations"):
        plan_copy(home, behind)
    for database in (home, other, behind):
        database.close()


@pytest.mark.model
def test_thoth_migrate_copies_a_chat_home_and_thoth_recalls_it_from_postgresql(
    tmp_path: Path, postgres: PostgresForTests
) -> None:
    home, url = tmp_path / "home", postgres.fresh_database()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    base.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

    def thoth(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bridge", *args], cwd=tmp_path,
                              env={**base, **env}, input=stdin, capture_output=True, text=True,
                              timeout=180)

    told = thoth("chat", stdin="our staging database lives on pelican-db-7\n")
    assert told.returncode == 0, told.stderr
    moved = thoth("migrate", "--to", url)
    assert moved.returncode == 0, moved.stderr
    assert "every count and checksum matches" in moved.stdout
    assert " episodes " in moved.stdout and "DIFFERS" not in moved.stdout

    found = thoth("recall", "where is the staging database", DATABASE_URL=url)
    assert found.returncode == 0 and "pelican-db-7" in found.stdout, found.stdout + found.stderr

    again = thoth("migrate", "--to", url)
    assert again.returncode == 1 and "--replace" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert thoth("migrate", "--to", url, "--replace").returncode == 0
    not_postgres = thoth("migrate", "--to", "mysql://db/thoth")
    assert not_postgres.returncode == 2 and "postgresql://" in not_postgres.stderr
    already = thoth("migrate", "--to", url, DATABASE_URL=url)
    assert already.returncode == 1 and "unset DATABASE_URL" in already.stderr
