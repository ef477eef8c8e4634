"""A real PostgreSQL (with pgvector) for the tests, started from the ``pgserver`` wheel
once per run: one database per test, so no test sees another's rows."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

_names = itertools.count(1)


class PostgresForTests:
    def __init__(self, directory: Path) -> None:
        # pgserver keeps a lock under the runtime directory; without one it warns.
        runtime = directory / "run"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
        import pgserver

        self._server: Any = pgserver.get_server(directory / "data", cleanup_mode="stop")
        self.admin_url = str(self._server.get_uri())

    def fresh_database(self) -> str:
        """A new, empty database's URL."""
        name = f"thoth_test_{next(_names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url(name)

    def url(self, database: str) -> str:
        return self.admin_url.replace("/postgres?", f"/{database}?")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``, as a deploy restarts it: every connection cut."""
        self._pg_ctl("-m", "fast", "restart")

    def go_down(self) -> None:
        """Stop the server, keeping its data, until ``come_back``."""
        self._pg_ctl("-m", "fast", "stop")

    def come_back(self) -> None:
        # restart on a stopped server starts it with the options it last ran with
        # (postmaster.opts): the same socket directory, so the same URLs.
        self._pg_ctl("restart")

    def _pg_ctl(self, *args: str) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", *args], pgdata=self._server.pgdata, user=self._server.system_user,
               timeout=60)

    def stop(self) -> None:
        self._server.cleanup()


def running_postgres(directory: Path) -> Iterator[PostgresForTests]:
    server = PostgresForTests(directory)
    try:
        yield server
    finally:
        server.stop()


def count(url: str, sql: str) -> int:
    """The one number ``sql`` selects in the database at ``url`` (0 for no row)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()
    return int(row[0]) if row else 0
