"""Copying an embedded home's SQLite database into PostgreSQL, and proving the copy.

`thoth migrate --to postgresql://…` (``bridge/cli/migrate.py``). Both databases are
first brought to the same migrations, so every table means the same on both. Each
table the home holds is copied in one transaction under the target's write lock, so a
copy that fails half-way leaves nothing behind; then every table's row count and
checksum are compared, read back from both sides.

Decided:
- Derived tables are not copied: SQLite's FTS5 index (``episodes_fts`` and its shadow
  tables) is what PostgreSQL's generated ``search`` column is, made from the rows.
- A target that already holds Thoth rows is refused; ``replace=True`` empties Thoth's
  tables there first (other tables in that database are never touched).
- The checksum is order-free (a sum of row digests), so neither engine's collation
  or row order matters; numbers compare by value, so SQLite's storage classes (an
  integral REAL read back as an int) do not read as differences.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from layers.shared.errors import ConfigurationError
from layers.shared.storage.database import Database
from layers.shared.storage.pgvector import HNSW_INDEXES

# Rows go in many to a statement: a table's statement triggers (the episodes' word
# counts) then run once a batch, not once a row, and a copy is one transaction.
BATCH_ROWS = 2_000
# PostgreSQL binds at most 65 535 parameters to one statement.
MAX_PARAMETERS = 65_535
# The record of migrations each database keeps for itself: made by opening it.
OWN_RECORD = "schema_migrations"
_CHECKSUM_MODULUS = 2**256


class CannotCopy(ConfigurationError):
    """The target is not empty, or the two databases' tables do not match."""


@dataclass(frozen=True)
class CopiedTable:
    name: str
    # Source expression per target column (SQLite's implicit ``rowid`` where the
    # target declares it as a column).
    source_columns: tuple[str, ...]
    target_columns: tuple[str, ...]
    identity: str | None  # the target's identity column, whose counter follows the copy


@dataclass(frozen=True)
class TableCheck:
    name: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def matches(self) -> bool:
        return (self.source_rows, self.source_checksum) == (
            self.target_rows,
            self.target_checksum,
        )


def plan_copy(source: Database, target: Database) -> list[CopiedTable]:
    """The tables to copy, parents before children, or why they cannot be."""
    if source.dialect != "sqlite" or target.dialect != "postgresql":
        raise CannotCopy("copies go from the embedded SQLite home to PostgreSQL")
    if source.applied() != target.applied():
        raise CannotCopy(
            "the two databases are at different migrations: run this Thoth's `thoth doctor`"
            " on both"
        )
    sources = _sqlite_tables(source)
    targets = _postgres_tables(target)
    missing = sorted(set(sources) - set(targets))
    if missing:
        raise CannotCopy(f"the target has no table for {', '.join(missing)}")
    tables = []
    for name in _parents_first(target, sorted(sources)):
        columns, identity = targets[name]
        tables.append(
            CopiedTable(
                name=name,
                source_columns=tuple(_source_column(name, column, sources[name])
                                     for column in columns),
                target_columns=columns,
                identity=identity,
            )
        )
    return tables


def copy_database(
    source: Database,
    target: Database,
    tables: Sequence[CopiedTable],
    *,
    replace: bool,
    on_rows: Callable[[int], None] = lambda count: None,
) -> None:
    """Copy every row of ``tables`` in one transaction; ``on_rows`` hears each batch."""
    with target.write() as into:
        counts = {table.name: _count(into, table.name) for table in tables}
        held = [f"{name} ({rows} rows)" for name, rows in counts.items() if rows > 0]
        if held and not replace:
            raise CannotCopy(
                f"the target already holds Thoth data ({', '.join(held[:4])}"
                f"{', …' if len(held) > 4 else ''}): pass --replace to empty Thoth's tables"
                " there first"
            )
        if held:
            names = ", ".join(_quoted(table.name) for table in tables)
            into.execute(f"TRUNCATE {names} RESTART IDENTITY")
        # An HNSW index built once over every row is many times quicker than one grown
        # row by row; dropped and made again inside this transaction, so no one sees
        # the table without it.
        rebuilt = [(str(row[0]), str(row[1])) for row in into.execute(HNSW_INDEXES)]
        for name, _ in rebuilt:
            into.execute(f"DROP INDEX {_quoted(name)}")
        for table in tables:
            size = _rows_per_statement(table)
            full = _insert_sql(table, size)
            with source.read() as out:
                selected = out.execute(
                    f"SELECT {', '.join(table.source_columns)} FROM {_quoted(table.name)}"
                )
                for batch in _batches(selected, size):
                    insert = full if len(batch) == size else _insert_sql(table, len(batch))
                    into.execute(insert, [value for row in batch for value in row])
                    on_rows(len(batch))
            if table.identity is not None:
                column = _quoted(table.identity)
                into.execute(
                    f"SELECT setval(pg_get_serial_sequence(?, ?),"
                    f" (SELECT coalesce(max({column}), 0) + 1 FROM {_quoted(table.name)}),"
                    " false)",
                    (_quoted(table.name), table.identity),
                )
        for _, definition in rebuilt:
            into.execute(definition)


def check_copy(
    source: Database, target: Database, tables: Sequence[CopiedTable]
) -> list[TableCheck]:
    """Each table's row count and checksum, read back from both databases."""
    checks = []
    for table in tables:
        with source.read() as out:
            source_rows, source_sum = checksum(out.execute(
                f"SELECT {', '.join(table.source_columns)} FROM {_quoted(table.name)}"
            ))
        with target.read() as into:
            target_rows, target_sum = checksum(into.execute(
                f"SELECT {', '.join(map(_quoted, table.target_columns))}"
                f" FROM {_quoted(table.name)}"
            ))
        checks.append(TableCheck(table.name, source_rows, target_rows, source_sum, target_sum))
    return checks


def checksum(rows: Iterable[Sequence[Any]]) -> tuple[int, str]:
    """How many rows, and a digest of them that ignores their order."""
    total = 0
    count = 0
    for row in rows:
        digest = hashlib.sha256()
        for value in row:
            part = _canonical(value)
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        total = (total + int.from_bytes(digest.digest(), "big")) % _CHECKSUM_MODULUS
        count += 1
    return count, f"{total:064x}"[:16]


def _canonical(value: Any) -> bytes:
    if value is None:
        return b"N"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    if isinstance(value, int):  # bool included: True is 1
        return b"n" + str(int(value)).encode()
    if isinstance(value, float):
        return b"f" + value.hex().encode()
    if isinstance(value, str):
        return b"s" + value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes | bytearray | memoryview):
        return b"b" + bytes(value)
    raise TypeError(f"no checksum for a {type(value).__name__}")


def _sqlite_tables(source: Database) -> dict[str, set[str]]:
    """The home's tables and their columns, less SQLite's own and derived ones."""
    with source.read() as conn:
        listed = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
        ).fetchall()
        virtual = [name for name, sql in listed if str(sql).upper().startswith("CREATE VIRTUAL")]
        tables = {}
        for name, _ in listed:
            derived = any(name == v or name.startswith(f"{v}_") for v in virtual)
            if derived or name.startswith("sqlite_") or name == OWN_RECORD:
                continue
            rows = conn.execute(f"PRAGMA table_info({_quoted(name)})").fetchall()
            tables[name] = {str(row[1]) for row in rows}
    return tables


def _postgres_tables(target: Database) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """Each table's columns a copy writes (generated ones are computed), and its
    identity column."""
    with target.read() as conn:
        rows = conn.execute(
            "SELECT table_name, column_name, is_generated, is_identity"
            " FROM information_schema.columns WHERE table_schema = current_schema()"
            " ORDER BY table_name, ordinal_position"
        ).fetchall()
    columns: dict[str, list[str]] = {}
    identities: dict[str, str] = {}
    for table, column, generated, identity in rows:
        if generated == "ALWAYS":
            continue
        columns.setdefault(table, []).append(column)
        if identity == "YES":
            identities[table] = column
    return {table: (tuple(names), identities.get(table)) for table, names in columns.items()}


def _source_column(table: str, column: str, present: set[str]) -> str:
    if column in present:
        return _quoted(column)
    if column == "rowid":
        return "rowid"  # SQLite's own row number, which the target keeps as a column
    raise CannotCopy(f"the home's table {table} has no column {column}")


def _parents_first(target: Database, names: list[str]) -> list[str]:
    """``names`` ordered so a table comes after every table its foreign keys name."""
    with target.read() as conn:
        edges = conn.execute(
            "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint"
            " WHERE contype = 'f' AND connamespace = current_schema()::regnamespace"
        ).fetchall()
    parents: dict[str, set[str]] = {name: set() for name in names}
    for child, parent in edges:
        if child in parents and parent in parents and child != parent:
            parents[child].add(parent)
    ordered: list[str] = []
    while parents:
        ready = sorted(name for name, waiting in parents.items() if not waiting - set(ordered))
        if not ready:
            raise CannotCopy(f"foreign keys go round in a circle among {sorted(parents)}")
        ordered.extend(ready)
        for name in ready:
            del parents[name]
    return ordered


def _insert_sql(table: CopiedTable, rows: int) -> str:
    columns = ", ".join(map(_quoted, table.target_columns))
    row = "(" + ", ".join("?" for _ in table.target_columns) + ")"
    # The source's ids are kept, so rows that refer to them still do.
    overriding = " OVERRIDING SYSTEM VALUE" if table.identity is not None else ""
    values = ", ".join([row] * rows)
    return f"INSERT INTO {_quoted(table.name)} ({columns}){overriding} VALUES {values}"


def _rows_per_statement(table: CopiedTable) -> int:
    return min(BATCH_ROWS, MAX_PARAMETERS // len(table.target_columns))


def _count(conn: Any, table: str) -> int:
    (rows,) = conn.execute(f"SELECT count(*) FROM {_quoted(table)}").fetchone()
    return int(rows)


def _batches(rows: Iterable[Sequence[Any]], size: int) -> Iterator[list[Sequence[Any]]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
