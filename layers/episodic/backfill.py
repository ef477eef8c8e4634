"""Bringing episodes stored before episodic migrations 6 and 10 up to how a new one is
stored.

Three tasks, each a row of ``episode_backfills`` (the next rowid to do and the last one
owed): ``turn_before``, the words of the turn before (store.py writes them for every
new episode), ``sentence_units``, the episode embedded a sentence a vector
(chunking.py), and ``names_called``, the names its words call people by
(called_names.py). `thoth episodes backfill` runs them, with a progress bar.

Decided:
- Each batch is one transaction with its progress, so a stopped backfill loses nothing
  and running it again goes on where it stopped; until then the rest answer as before
  (no borrowed words, one whole-turn vector), which is all a half-backfilled store
  lacks.
- Embedding runs outside the transaction (it is the slow part): an episode forgotten
  meanwhile gets no vectors, and one forgotten after is gone with its new vectors.
- With the ``sentence_units`` lever off, that task is left owed: turning the lever on
  later and running the backfill again still does it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from layers.episodic.chunking import episode_units
from layers.episodic.store import (
    EPISODE_COLUMNS,
    VECTOR_DTYPE,
    episode_of_row,
    keep_names_called,
    turn_before_of,
)
from layers.shared.embedding.embedder import Embedder
from layers.shared.storage.connection import Connection
from layers.shared.storage.database import Database

# Episodes a batch: about a second of embedding on this machine's two cores.
BATCH_EPISODES = 256
TASKS = ("turn_before", "sentence_units", "names_called")

# Each episode of the batch, its turn before by the rule a new episode's is found
# (store.turn_before_of), then that turn's words.
_LINK_TURN_BEFORE = (
    f"UPDATE episodes SET turn_before_rowid = ({turn_before_of('episodes')})"
    " WHERE rowid BETWEEN :first AND :last"
)
_COPY_TURN_BEFORE = (
    "UPDATE episodes SET turn_before = (SELECT n.user_text FROM episodes n"
    " WHERE n.rowid = episodes.turn_before_rowid)"
    " WHERE rowid BETWEEN :first AND :last AND turn_before_rowid IS NOT NULL"
)


@dataclass(frozen=True)
class Owed:
    """How many stored episodes a task has still to do."""

    task: str
    episodes: int


class Backfill:
    def __init__(self, db: Database, embedder: Embedder, *, sentence_units: bool,
                 reembedded: Callable[[], None] = lambda: None) -> None:
        self._db = db
        self._embedder = embedder
        self._sentence_units = sentence_units
        # This process's own vector index, told its episodes' vectors changed (another
        # process's index sees it from the database: memory.py).
        self._reembedded = reembedded

    def owed(self) -> list[Owed]:
        """Each task's episodes still to do (only tasks with some)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT b.task, (SELECT count(*) FROM episodes e"
                "   WHERE e.rowid BETWEEN b.next_rowid AND b.last_rowid)"
                " FROM episode_backfills b ORDER BY b.task DESC"
            ).fetchall()
        return [Owed(str(task), int(count)) for task, count in rows if int(count)]

    def run(self, on_batch: Callable[[int], None] = lambda episodes: None) -> int:
        """Do every task owed that its lever allows; ``on_batch`` hears how many episodes
        each batch did. Returns how many episodes were done in all."""
        done = 0
        for task in TASKS:
            if task == "sentence_units" and not self._sentence_units:
                continue
            while (span := self._next_span(task)) is not None:
                first, last, count = span
                if task == "turn_before":
                    self._link_turns_before(first, last)
                elif task == "names_called":
                    self._read_names_called(first, last)
                else:
                    self._embed_by_sentence(first, last)
                done += count
                on_batch(count)
        return done

    def _next_span(self, task: str) -> tuple[int, int, int] | None:
        """The next batch's first and last rowid, and how many episodes it holds."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT next_rowid, last_rowid FROM episode_backfills WHERE task = ?", (task,)
            ).fetchone()
            if row is None or int(row[0]) > int(row[1]):
                return None
            rowids = [int(r[0]) for r in conn.execute(
                "SELECT rowid FROM episodes WHERE rowid BETWEEN ? AND ? ORDER BY rowid LIMIT ?",
                (int(row[0]), int(row[1]), BATCH_EPISODES),
            ).fetchall()]
        if not rowids:  # the rest were forgotten meanwhile
            with self._db.write() as conn:
                _advance(conn, task, int(row[1]))
            return None
        last = rowids[-1] if len(rowids) == BATCH_EPISODES else int(row[1])
        return rowids[0], last, len(rowids)

    def _link_turns_before(self, first: int, last: int) -> None:
        span = {"first": first, "last": last}
        with self._db.write() as conn:
            conn.execute(_LINK_TURN_BEFORE, span)
            conn.execute(_COPY_TURN_BEFORE, span)
            _advance(conn, "turn_before", last)

    def _read_names_called(self, first: int, last: int) -> None:
        with self._db.write() as conn:
            rows = conn.execute(
                f"SELECT rowid, {EPISODE_COLUMNS} FROM episodes e WHERE rowid BETWEEN ? AND ?"
                " AND NOT EXISTS (SELECT 1 FROM episode_names n"
                "                 WHERE n.episode_rowid = e.rowid) ORDER BY rowid",
                (first, last)).fetchall()
            for row in rows:
                keep_names_called(conn, int(row[0]), episode_of_row(row[1:]))
            _advance(conn, "names_called", last)

    def _embed_by_sentence(self, first: int, last: int) -> None:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT e.rowid, e.user_text, e.summary, e.user_name"
                " FROM episodes e WHERE e.rowid BETWEEN ? AND ?",
                (first, last),
            ).fetchall()
        # Units the same as the whole turn's (one sentence: most turns) are stored already.
        todo = [(int(row[0]), units) for row in rows
                if (units := episode_units(str(row[1]), str(row[2]), row[3]))
                != episode_units(str(row[1]), str(row[2]), row[3], by_sentence=False)]
        texts = [unit for _, units in todo for unit in units]
        vectors = self._embedder.embed(texts) if texts else np.zeros((0, self._embedder.dim))
        with self._db.write() as conn:
            still = _existing(conn, [rowid for rowid, _ in todo])
            start = 0
            for rowid, units in todo:
                mine, start = vectors[start : start + len(units)], start + len(units)
                if rowid not in still:
                    continue
                conn.execute("DELETE FROM episode_vectors WHERE episode_rowid = ?", (rowid,))
                conn.executemany(
                    "INSERT INTO episode_vectors (episode_rowid, chunk, vector) VALUES (?, ?, ?)",
                    [(rowid, chunk, np.asarray(vector).astype(VECTOR_DTYPE).tobytes())
                     for chunk, vector in enumerate(mine)],
                )
            _advance(conn, "sentence_units", last)
        if todo:
            self._reembedded()


def _advance(conn: Connection, task: str, done_through: int) -> None:
    conn.execute("UPDATE episode_backfills SET next_rowid = ? WHERE task = ?",
                 (done_through + 1, task))


def _existing(conn: Connection, rowids: Sequence[int]) -> set[int]:
    if not rowids:
        return set()
    marks = ", ".join("?" * len(rowids))
    return {int(row[0]) for row in conn.execute(
        f"SELECT rowid FROM episodes WHERE rowid IN ({marks})", list(rowids)).fetchall()}
