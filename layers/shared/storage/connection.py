"""What a store may ask of a connection, on either engine.

A store writes its SQL once, in the dialect both engines read: ``?`` placeholders,
``:name`` for named ones, ``INSERT … ON CONFLICT (…) DO …`` rather than SQLite's
``INSERT OR …``, ``RETURNING`` rather than ``lastrowid``, and ``"user"`` quoted (a
reserved word in PostgreSQL). The PostgreSQL engine turns the placeholders into
psycopg's ``%s`` and ``%(name)s``; full-text search and vectors,
where the engines really differ, live in engine-specific code (the episodic store).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

# ``?`` placeholders take a sequence, ``:name`` ones a mapping.
Parameters = Sequence[Any] | Mapping[str, Any]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    def execute(self, sql: str, parameters: Parameters = ..., /) -> Cursor: ...

    def executemany(self, sql: str, seq_of_parameters: Iterable[Parameters], /) -> Cursor: ...
