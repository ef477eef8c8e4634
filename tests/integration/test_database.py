"""The SQLite store: migrations, WAL, and durability across a killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from layers.errors import ConfigurationError
from layers.storage.database import Database
from layers.storage.migrations import MIGRATIONS, Migration


def test_migrations_run_once_and_are_recorded(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "thoth.db")
    assert db.applied_versions() == {m.version for m in MIGRATIONS}
    db.close()
    extra = Migration(MIGRATIONS[-1].version + 1, "notes", "CREATE TABLE notes (body TEXT);")
    db = Database.open(tmp_path / "thoth.db", migrations=(*MIGRATIONS, extra))
    assert extra.version in db.applied_versions()
    with db.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = [
            row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY version")
        ]
    assert names == [m.name for m in (*MIGRATIONS, extra)]


def test_a_failed_write_rolls_back(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "thoth.db")
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
        from layers.storage.database import Database
        db = Database.open(Path({str(path)!r}))
        for i in range(3):
            with db.write() as conn:
                conn.execute(
                    "INSERT INTO episodes (id, user_text, summary, created_at, team, channel,"
                    " channel_type, embedding_model)"
                    " VALUES (?, 't', '', 0, 'l', 'l', 'public', 'm')",
                    (f"turn-{{i}}",),
                )
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
    db = Database.open(path)
    with db.read() as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM episodes ORDER BY id")]
    assert ids == ["turn-0", "turn-1", "turn-2"]


def test_unwritable_home_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigurationError, match="THOTH_HOME"):
        Database.open(blocker / "home" / "thoth.db")
