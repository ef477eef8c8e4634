"""Recall's two searches on PostgreSQL, both inside the database.

Each runs with the visibility rule in its WHERE clause (``visibility.sql_predicate``),
so nothing another person may not see leaves the database. Their scores feed the same
fusion and ranking as SQLite's (``ranking.py``): each search is scaled over its own
candidates there, so only their order matters.

- Words: ``episodes.search`` is a stored ``tsvector`` (English stemming, as FTS5's
  porter tokenizer stems), GIN-indexed. A word's weight is its inverse document
  frequency times ``ts_rank`` saturated (``rank / (rank + 1)``, normalised by
  length): BM25's two ideas, which plain ``ts_rank`` lacks (it has no IDF). How many
  episodes hold each word is kept in a table by triggers (``episode_words``), so
  weighing a query's words is one indexed read however common they are.

- Meaning: ``episode_vectors.embedding`` (pgvector, made from the stored float16
  bytes) under an HNSW index, cosine distance; an episode scores its best chunk's
  similarity. HNSW finds the nearest chunks first and visibility is applied to those,
  so a viewer who may see few of them would get few: the search then widens
  (``hnsw.ef_search`` doubled, up to pgvector's 1000) until it has enough visible
  episodes or the index has no more — what pgvector 0.8's iterative scans do, done
  here since the pgvector these machines run is 0.6. No process holds the vectors in
  memory: a replica starts at once, whatever the number of episodes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from layers.shared.places import Viewer
from layers.shared.places.visibility import sql_predicate
from layers.shared.storage.connection import Connection
from layers.shared.storage.database import Database
from layers.shared.storage.pgvector import HNSW_INDEXES

# The episode total only weighs words (IDF): minutes of staleness change nothing.
TOTAL_CACHE_SECONDS = 300.0
# Nearest chunks HNSW is first asked for (its ef_search), and the most it can give.
FIRST_CANDIDATES = 200
MAX_CANDIDATES = 1000
# ts_rank's weight of each class, {D, C, B, A}: an episode's own words are A, its files'
# extracts B (migration 9) weighed as its own, the turn before's D (episodic migration
# 6), at half weight as on SQLite (store.py). A's 0.1 is what every word weighed before
# the classes, so own words score as they did.
WEIGHTS_WITH_TURN_BEFORE = "{0.05, 0, 0.1, 0.1}"
WEIGHTS_OWN_WORDS = "{0, 0, 0.1, 0.1}"


class PostgresEpisodeSearch:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._total: tuple[int, float] | None = None  # (count, when it was read)

    def _episode_total(self) -> int:
        now = time.monotonic()
        if self._total is None or now - self._total[1] > TOTAL_CACHE_SECONDS:
            with self._db.read() as conn:
                count = int(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])
            self._total = (count, now)
        return self._total[0]

    def document_counts(self, words: Sequence[str]) -> dict[str, int]:
        """How many episodes each word (stemmed as the index stems it) occurs in, read
        from ``episode_words`` (kept by triggers: episodic migration 4) in one query.

        A word PostgreSQL's parser makes several lexemes of gets the count of its
        rarest: at most as many episodes hold them all, as ``plainto_tsquery`` asks."""
        if not words:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT word, (SELECT coalesce(min(coalesce(counted.episodes, 0)), 0)"
                "   FROM unnest(tsvector_to_array(to_tsvector('english', word))) AS stems (lexeme)"
                "   LEFT JOIN episode_words AS counted ON counted.lexeme = stems.lexeme)"
                " FROM unnest(?::text[]) AS word",
                (list(words),),
            ).fetchall()
        return {str(word): int(count) for word, count in rows}

    def lexical_search(
        self, document_counts: dict[str, int], viewer: Viewer, limit: int,
        turn_before: bool = True,
    ) -> list[tuple[int, float]]:
        """(rowid, score) of the episodes ``viewer`` may see that hold any of the words,
        best first; ``document_counts`` are the words to search and how common each is
        (``turn_before``: in the turn before's words too, else their own only)."""
        scored = self._word_scores(document_counts, turn_before)
        if scored is None:
            return []
        score, any_word, arguments = scored
        predicate, params = sql_predicate(viewer)
        sql = (
            f"SELECT e.rowid, {score} AS score FROM episodes e"
            f" WHERE e.search @@ ({any_word}) AND {predicate}"
            f"{'' if turn_before else f' AND {score} > 0'}"
            " ORDER BY score DESC, e.rowid LIMIT :limit"
        )
        with self._db.read() as conn:
            rows = conn.execute(sql, {**arguments, **params, "limit": limit}).fetchall()
        return [(int(row[0]), float(row[1])) for row in rows]

    def lexical_scores(self, document_counts: dict[str, int], rowids: Sequence[int],
                       turn_before: bool = True) -> dict[int, float]:
        """The same score as ``lexical_search`` for each listed episode that holds any of
        the words (visibility the caller's: the rowids came from a search)."""
        scored = self._word_scores(document_counts, turn_before)
        if scored is None or not rowids:
            return {}
        score, any_word, arguments = scored
        marks = ", ".join(f":r{index}" for index in range(len(rowids)))
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT e.rowid, {score} FROM episodes e WHERE e.rowid IN ({marks})"
                f" AND e.search @@ ({any_word})",
                {**arguments, **{f"r{index}": rowid for index, rowid in enumerate(rowids)}},
            ).fetchall()
        return {int(row[0]): float(row[1]) for row in rows if float(row[1]) > 0}

    def _word_scores(self, document_counts: dict[str, int], turn_before: bool
                     ) -> tuple[str, str, dict[str, object]] | None:
        """The score expression (each word's IDF times its ts_rank), the "any word" query
        and their parameters; None when no word is in any episode."""
        words = [word for word, count in document_counts.items() if count]
        if not words:
            return None
        # At least each word's own count: a cached total may predate the newest episodes.
        total = max(self._episode_total(), *document_counts.values())
        terms = []
        arguments: dict[str, object] = {
            "weights": WEIGHTS_WITH_TURN_BEFORE if turn_before else WEIGHTS_OWN_WORDS}
        for index, word in enumerate(words):
            count = document_counts[word]
            arguments[f"w{index}"] = word
            arguments[f"idf{index}"] = math.log(1 + (total - count + 0.5) / (count + 0.5))
            query = f"plainto_tsquery('english', :w{index})"
            rank = f"ts_rank(CAST(:weights AS float4[]), e.search, {query}, 1 | 32)"
            terms.append(f"CASE WHEN e.search @@ {query} THEN :idf{index} * {rank} ELSE 0 END")
        any_word = " || ".join(f"plainto_tsquery('english', :w{index})"
                               for index in range(len(words)))
        return " + ".join(terms), any_word, arguments

    def similarities(self, vector: npt.NDArray[np.float32],
                     rowids: Sequence[int]) -> dict[int, float]:
        """Each listed episode's cosine with ``vector`` (its best chunk's), read exactly
        from its own rows: no index walk, visibility the caller's."""
        if not rowids:
            return {}
        marks = ", ".join(f":r{index}" for index in range(len(rowids)))
        arguments: dict[str, object] = {
            "query": _vector_literal(vector),
            **{f"r{index}": rowid for index, rowid in enumerate(rowids)}}
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT episode_rowid, max(1 - (embedding <=> :query::vector))"
                f" FROM episode_vectors WHERE episode_rowid IN ({marks}) GROUP BY episode_rowid",
                arguments,
            ).fetchall()
        return {int(row[0]): float(row[1]) for row in rows}

    def semantic_search(
        self, vector: npt.NDArray[np.float32], viewer: Viewer, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, cosine similarity of its best chunk) of the episodes ``viewer`` may
        see nearest ``vector``, best first."""
        predicate, params = sql_predicate(viewer)
        arguments: dict[str, object] = {
            **params, "query": _vector_literal(vector), "limit": limit,
        }
        sql = (
            "WITH nearest AS MATERIALIZED (SELECT episode_rowid,"
            " embedding <=> :query::vector AS distance FROM episode_vectors"
            " ORDER BY embedding <=> :query::vector LIMIT :candidates)"
            " SELECT e.rowid, max(1 - n.distance) AS similarity, count(*) OVER () AS visible,"
            " (SELECT count(*) FROM nearest) AS candidates"
            " FROM nearest n JOIN episodes e ON e.rowid = n.episode_rowid"
            f" WHERE {predicate} GROUP BY e.rowid ORDER BY similarity DESC, e.rowid LIMIT :limit"
        )
        candidates = FIRST_CANDIDATES
        with self._db.read() as conn:
            while True:
                # HNSW returns at most ef_search rows, however large the LIMIT.
                conn.execute("SELECT set_config('hnsw.ef_search', ?, false)", (str(candidates),))
                arguments["candidates"] = candidates
                rows = conn.execute(sql, arguments).fetchall()
                # How many chunks the index gave (with nothing visible, counted apart:
                # at most ``candidates`` rows read).
                given = int(rows[0][3]) if rows else _chunks_up_to(conn, candidates)
                enough = bool(rows) and int(rows[0][2]) >= limit
                if enough or given < candidates or candidates >= MAX_CANDIDATES:
                    break
                candidates = min(candidates * 2, MAX_CANDIDATES)
        return [(int(row[0]), float(row[1])) for row in rows]


@dataclass(frozen=True)
class RecallFootprint:
    """What recall reads on PostgreSQL against the memory PostgreSQL keeps pages in."""

    hnsw_bytes: int  # pgvector's index
    rows_bytes: int  # the tables it leads to: each candidate's chunk, then its episode
    shared_buffers_bytes: int

    @property
    def wanted_bytes(self) -> int:
        return self.hnsw_bytes + self.rows_bytes

    @property
    def fits(self) -> bool:
        return self.wanted_bytes <= self.shared_buffers_bytes


def recall_footprint(db: Database) -> RecallFootprint:
    """A search walks the HNSW graph to pages all over the index, then reads each
    candidate's chunk and episode rows: what does not fit in ``shared_buffers`` is read
    from the OS (or the disk) on every recall. At a million episodes its vector search
    took 20–70 ms so, against 4–9 ms from memory (docs/deployment.md)."""
    with db.read() as conn:
        hnsw, rows, buffers = conn.execute(
            "SELECT (SELECT coalesce(sum(bytes), 0)"
            f"   FROM ({HNSW_INDEXES}) AS hnsw (name, definition, bytes)),"
            " pg_table_size('episode_vectors') + pg_table_size('episodes'),"
            " pg_size_bytes(current_setting('shared_buffers'))"
        ).fetchone()
    return RecallFootprint(int(hnsw), int(rows), int(buffers))


def _chunks_up_to(conn: Connection, most: int) -> int:
    return int(conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM episode_vectors LIMIT ?) AS first_chunks", (most,)
    ).fetchone()[0])


def _vector_literal(vector: npt.NDArray[np.float32]) -> str:
    return "[" + ",".join(map(repr, vector.astype(np.float32).tolist())) + "]"
