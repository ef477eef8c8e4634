"""SQLite's write on a real full disk (a small tmpfs, ``tests/small_disk.py``): refused as
``StorageFull``, nothing of it kept, the file sound, the next write through once there is
room; and a failed COMMIT or an in-block ROLLBACK never leaves the connection stuck in a
transaction or hides the error that says why."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from layers.shared.dependency_health import SQLITE, DependencyHealth
from layers.shared.errors import StorageFull
from layers.shared.storage.retried import write_retried
from layers.shared.storage.sqlite import SqliteDatabase
from tests.small_disk import MB, SmallDisk, small_disk_or_skip


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk_or_skip(tmp_path / "disk", 2 * MB) as mounted:
        yield mounted


def _rows(db: SqliteDatabase) -> int:
    with db.read() as conn:
        return int(conn.execute("SELECT count(*) FROM kept").fetchone()[0])


def _opened(path: Path, health: DependencyHealth) -> SqliteDatabase:
    db = SqliteDatabase.open_file(path, schemas=[], health=health)
    with db.write() as conn:
        conn.execute("CREATE TABLE kept (body BLOB NOT NULL)")
    with db.write() as conn:
        conn.execute("INSERT INTO kept VALUES (randomblob(2000))")
    # The write-ahead log at its smallest: every write from here needs new room.
    db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def test_a_write_on_a_full_disk_is_refused_whole_and_the_next_goes_through_after(
    disk: SmallDisk, caplog: pytest.LogCaptureFixture
) -> None:
    health = DependencyHealth()
    db = _opened(disk.path / "thoth.db", health)
    disk.fill()
    assert disk.free_bytes() == 0

    body_ran = False
    with pytest.raises(StorageFull, match="is full"), db.write() as conn:
        for _ in range(3):
            conn.execute("INSERT INTO kept VALUES (randomblob(2000))")
        body_ran = True
    # The statements went to SQLite's cache; the COMMIT found no room, and all three are
    # gone with it.
    assert body_ran
    assert not db.connection.in_transaction
    assert _rows(db) == 1
    assert health.is_failing(SQLITE)
    assert health.failing_now()[SQLITE].why.startswith("disk full")
    # Deleting needs room too (the log grows): refused the same way, nothing lost.
    with pytest.raises(StorageFull), db.write() as conn:
        conn.execute("DELETE FROM kept")
    assert _rows(db) == 1
    assert db.integrity_problems() == []

    disk.free()
    with db.write() as conn:
        conn.execute("INSERT INTO kept VALUES (randomblob(2000))")
    assert _rows(db) == 2
    assert not health.is_failing(SQLITE)
    with db.read() as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    # One line when it started failing, one when it was back: not one per write.
    changes = [r.getMessage() for r in caplog.records if r.name.endswith("dependency_health")]
    assert [line.split(":")[0].split(" after")[0] for line in changes] == [
        "sqlite is failing", "sqlite is back"]
    db.close()


def test_a_file_reopened_on_a_full_disk_says_the_disk_is_full_and_opens_once_freed(
    disk: SmallDisk,
) -> None:
    db = _opened(disk.path / "thoth.db", DependencyHealth())
    db.close()
    disk.fill()
    # A restart while the disk is full: opening makes the -shm and -wal files, which need
    # room; said as what it is, not as a THOTH_HOME that cannot be written.
    with pytest.raises(StorageFull, match="is full"):
        SqliteDatabase.open_file(disk.path / "thoth.db", schemas=[])
    disk.free()
    again = SqliteDatabase.open_file(disk.path / "thoth.db", schemas=[])
    with again.write() as conn:
        conn.execute("INSERT INTO kept VALUES (randomblob(2000))")
    assert _rows(again) == 2
    again.close()


def test_a_failed_commit_that_left_its_transaction_open_is_rolled_back(tmp_path: Path) -> None:
    # A deferred foreign key is checked at COMMIT, and a COMMIT it fails leaves the
    # transaction open (SQLite's documented behaviour): the same state a COMMIT that
    # found no room can leave.
    db = SqliteDatabase.open_file(tmp_path / "thoth.db", schemas=[])
    with db.write() as conn:
        conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        conn.execute("CREATE TABLE child (parent INTEGER REFERENCES parent (id)"
                     " DEFERRABLE INITIALLY DEFERRED)")
    with pytest.raises(Exception, match="FOREIGN KEY"), db.write() as conn:
        conn.execute("INSERT INTO child VALUES (7)")
    assert not db.connection.in_transaction
    with db.write() as conn:
        conn.execute("INSERT INTO parent VALUES (7)")
        conn.execute("INSERT INTO child VALUES (7)")
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM child").fetchone()[0] == 1
    db.close()


def test_an_in_block_rollback_that_finds_no_transaction_keeps_the_first_error(
    tmp_path: Path,
) -> None:
    db = SqliteDatabase.open_file(tmp_path / "thoth.db", schemas=[])
    # SQLite ended the transaction itself (as it may on SQLITE_FULL or an I/O error);
    # the error the block raised is the one the caller hears.
    with pytest.raises(LookupError, match="the real reason"), db.write() as conn:
        conn.execute("ROLLBACK")
        raise LookupError("the real reason")
    with db.write() as conn:
        conn.execute("CREATE TABLE after (x)")
    db.close()


def test_a_background_write_on_a_full_disk_is_given_up_at_once_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempts: list[int] = []

    async def full() -> None:
        attempts.append(1)
        raise StorageFull("/home/thoth.db", "database or disk is full")

    async def no_wait(_: float) -> None:
        raise AssertionError("a full disk is not waited for")

    caplog.set_level(logging.INFO, logger="layers.shared.storage.retried")
    kept = asyncio.run(write_retried("episode e1", full, delays_s=(0.2, 1.0), sleep=no_wait))
    assert kept is False
    assert attempts == [1]
    (line,) = [r for r in caplog.records if r.name == "layers.shared.storage.retried"]
    assert line.getMessage() == "episode e1 is not kept: the database's disk is full"
    assert line.exc_info is None


def test_a_write_that_changes_nothing_does_not_say_a_full_disk_is_back(
    disk: SmallDisk,
) -> None:
    health = DependencyHealth()
    db = _opened(disk.path / "thoth.db", health)
    disk.fill()
    with pytest.raises(StorageFull), db.write() as conn:
        conn.execute("INSERT INTO kept VALUES (randomblob(2000))")
    # An UPDATE of no row commits without room (a lease renewal with no lease held): the
    # disk is no less full for it.
    with db.write() as conn:
        conn.execute("UPDATE kept SET body = body WHERE rowid = -1")
    assert health.is_failing(SQLITE)
    db.close()
