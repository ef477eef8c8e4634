"""Recall's two searches on PostgreSQL, both inside the database.

Each runs with the visibility rule in its WHERE clause (``visibility.sql_predicate``),
so nothing another person may not see leaves the database. Their scores feed the same
fusion and ranking as SQLite's (``ranking.py``): each search is scaled over its own
candidates there, so only their order matters.

- Words: ``episodes.search`` is a stored ``tsvector`` of the words as FTS5 makes them
  (episodic migration 11: split, folded and Porter-stemmed alike), GIN-indexed, and each
  episode is scored by FTS5's own BM25 over them: the same IDF, term frequencies (the
  turn before's words at half weight, classes A/B/D), document length
  (``search_tokens``) and average length, so both engines give an episode the same word
  score. How many episodes hold each word is kept in a table by triggers
  (``episode_words``), so weighing a query's words is one indexed read however common
  they are; the episode total and their words' total are read every few minutes.

- Meaning: ``episode_vectors.embedding`` (pgvector, made from the stored float16
  bytes); an episode scores its best chunk's inner product with the query, as the
  in-memory index scores it on SQLite (not pgvector's cosine, which divides again by
  the rounded vector's length: 5e-5 off). Up to ``EXACT_UP_TO`` vectors every chunk the
  viewer may see is scored, as SQLite scans its small stores exactly; above it an HNSW
  index (cosine distance) finds the nearest chunks first and visibility is applied to
  those, so a viewer who may see few of them would get few: the search then widens
  (``hnsw.ef_search`` doubled, up to pgvector's 1000) until it has enough visible
  episodes or the index has no more — what pgvector 0.8's iterative scans do, done
  here since the pgvector these machines run is 0.6. No process holds the vectors in
  memory: a replica starts at once, whatever the number of episodes.

Equal scores are ordered by rowid on both engines.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from layers.episodic.store import TURN_BEFORE_WEIGHT
from layers.shared.places import Viewer
from layers.shared.places.visibility import sql_predicate
from layers.shared.storage.connection import Connection
from layers.shared.storage.database import Database
from layers.shared.storage.pgvector import HNSW_INDEXES

# The totals (BM25's episode count and average length, and how many vectors there are)
# are read every few minutes: a few minutes' new episodes move a word's weight little.
TOTALS_CACHE_SECONDS = 300.0
# Nearest chunks HNSW is first asked for (its ef_search), and the most it can give.
FIRST_CANDIDATES = 200
MAX_CANDIDATES = 1000
# FTS5's BM25 (fts5_aux.c): its constants, and the weight it gives a word most episodes
# hold (its IDF would be negative).
BM25_K1 = 1.2
BM25_B = 0.75
BM25_LEAST_IDF = 1e-6
# Up to this many vectors the search by meaning scores every chunk the viewer may see,
# as SQLite does (it scans exactly below vector_index.APPROXIMATE_FROM, 50,000): the
# same candidates on both engines. PostgreSQL keeps each vector out of line (TOAST), so
# the scan costs about 4-5 us a visible vector (measured on LoCoMo's five conversations,
# 7,558 vectors, a loaded 2-core machine: 15 ms p50 for a viewer of one conversation, 39
# ms for one who sees all, against HNSW's 7-10 ms). Above it HNSW, as before: stores of
# 100k and 1M are searched as they were.
EXACT_UP_TO = 10_000
# The exact scan keeps this many best chunks a wanted episode (vector_index._exact's).
EXACT_CHUNKS_PER_EPISODE = 4
# A query word's stems are the same forever (thoth_words is immutable): kept, up to this.
STEMS_KEPT = 50_000


@dataclass(frozen=True)
class _Totals:
    episodes: int
    words: int  # every word of every episode, as FTS5 counts its tokens
    vectors: int  # at least (not counted past the exact scan's size)
    read_at: float


class PostgresEpisodeSearch:
    def __init__(self, db: Database, *, exact_up_to: int = EXACT_UP_TO) -> None:
        self._db = db
        self._exact_up_to = exact_up_to
        self._totals: _Totals | None = None
        self._stems: dict[str, tuple[str, ...]] = {}

    def _totals_now(self, at_least: int = 0) -> _Totals:
        """The cached totals, read again when stale or fewer episodes than ``at_least``
        (a word's own count: the cache predates the newest episodes)."""
        now = time.monotonic()
        totals = self._totals
        if (totals is None or now - totals.read_at > TOTALS_CACHE_SECONDS
                or totals.episodes < at_least):
            with self._db.read() as conn:
                episodes, words = conn.execute(
                    "SELECT count(*), coalesce(sum(search_tokens), 0) FROM episodes"
                ).fetchone()
                # Each episode has a vector or more: a store past the exact scan's size
                # by episodes is not counted again by vectors (a scan of every vector).
                vectors = episodes if int(episodes) > self._exact_up_to else conn.execute(
                    "SELECT count(*) FROM episode_vectors").fetchone()[0]
            totals = _Totals(int(episodes), int(words), int(vectors), now)
            self._totals = totals
        return totals

    def document_counts(self, words: Sequence[str]) -> dict[str, int]:
        """How many episodes each word (stemmed as the index stems it) occurs in, read
        from ``episode_words`` (kept by triggers: episodic migration 4) in one query.

        A word the tokenizer makes several words of gets the count of its rarest: at
        most as many episodes hold them all."""
        return self._counted(words)[0]

    def _counted(self, words: Sequence[str]
                 ) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
        """``document_counts``, and each word's stems (kept for the next recalls too)."""
        if not words:
            return {}, {}
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT word, array_agg(stems.lexeme ORDER BY stems.lexeme)"
                "   FILTER (WHERE stems.lexeme IS NOT NULL),"
                " coalesce(min(coalesce(counted.episodes, 0)), 0)"
                " FROM unnest(?::text[]) AS word"
                " LEFT JOIN LATERAL unnest(tsvector_to_array(thoth_words(word)))"
                "   AS stems (lexeme) ON true"
                " LEFT JOIN episode_words AS counted ON counted.lexeme = stems.lexeme"
                " GROUP BY word",
                (list(words),),
            ).fetchall()
        counts = {str(word): int(count) for word, _, count in rows}
        stems = {str(word): tuple(lexemes or ()) for word, lexemes, _ in rows}
        if len(self._stems) > STEMS_KEPT:
            self._stems.clear()
        self._stems.update(stems)
        # In the order asked, as SQLite's store answers: words of equal counts keep it
        # when the rarest are picked (lexical.affordable_terms), and BM25 sums them in it.
        return {word: counts[word] for word in words}, stems

    def lexical_search(
        self, document_counts: dict[str, int], viewer: Viewer, limit: int,
        turn_before: bool = True,
    ) -> list[tuple[int, float]]:
        """(rowid, BM25) of the episodes ``viewer`` may see that hold any of the words,
        best first; ``document_counts`` are the words to search and how common each is
        (``turn_before``: in the turn before's words too, else their own only)."""
        scored = self._word_scores(document_counts, turn_before)
        if scored is None:
            return []
        frequencies, score, arguments = scored
        predicate, params = sql_predicate(viewer)
        sql = (
            f"SELECT rowid, {score} AS score FROM (SELECT e.rowid, e.search_tokens,"
            f" {frequencies} FROM episodes e"
            f" WHERE e.search @@ CAST(:any_word AS tsquery) AND {predicate}) AS counted"
            " ORDER BY score DESC, rowid LIMIT :limit"
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
        frequencies, score, arguments = scored
        marks = ", ".join(f":r{index}" for index in range(len(rowids)))
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT rowid, {score} FROM (SELECT e.rowid, e.search_tokens, {frequencies}"
                f" FROM episodes e WHERE e.rowid IN ({marks})"
                " AND e.search @@ CAST(:any_word AS tsquery)) AS counted",
                {**arguments, **{f"r{index}": rowid for index, rowid in enumerate(rowids)}},
            ).fetchall()
        return {int(row[0]): float(row[1]) for row in rows}

    def _word_scores(self, document_counts: dict[str, int], turn_before: bool
                     ) -> tuple[str, str, dict[str, object]] | None:
        """FTS5's BM25 over an episode ``e``: each query word's frequency in it (columns
        ``f0``, ``f1``, …), the score made of them, and their parameters (the "any word"
        query among them); None when no word is in any episode.

        FTS5 scores each query word (a phrase) apart, in the order given, so two words of
        one stem count twice; without the turn before, a word's episodes are those holding
        it in their own words (FTS5's column filter), and only those are matched. A
        word's frequency is its occurrences each weighed by its class (the turn before's,
        D, at half): what ``ts_rank_cd`` sums for a one-word query, unnormalised (a
        float4, exact for these halves), as quick as the ts_rank this replaced."""
        words = [word for word, count in document_counts.items() if count]
        if not words:
            return None
        stems = self._stemmed(words)
        totals = self._totals_now(at_least=max(document_counts[word] for word in words))
        holding = document_counts if turn_before else self._own_counts(words, stems)
        classes = "" if turn_before else ":AB"
        arguments: dict[str, object] = {
            # ts_rank_cd's weights of the classes {D, C, B, A}.
            "weights": f"{{{TURN_BEFORE_WEIGHT if turn_before else 0}, 0, 1, 1}}",
            "k1": BM25_K1, "b": BM25_B,
            "avgdl": totals.words / totals.episodes if totals.words else 1.0,
        }
        frequencies: list[str] = []
        terms: list[str] = []
        for word in words:
            hits = holding.get(word, 0)
            idf = math.log((totals.episodes - hits + 0.5) / (hits + 0.5))
            for lexeme in stems[word]:
                index = len(terms)
                arguments[f"q{index}"] = f"'{lexeme}'{classes}"
                arguments[f"idf{index}"] = idf if idf > 0 else BM25_LEAST_IDF
                frequencies.append(f"ts_rank_cd(CAST(:weights AS float4[]), e.search,"
                                   f" CAST(:q{index} AS tsquery), 0) AS f{index}")
                # fts5_aux.c's expression, term by term in the same order.
                terms.append(
                    f"CAST(:idf{index} AS float8) * ((f{index} * (CAST(:k1 AS float8) + 1.0))"
                    f" / (f{index} + CAST(:k1 AS float8) * (1 - CAST(:b AS float8)"
                    f" + CAST(:b AS float8) * search_tokens / CAST(:avgdl AS float8))))")
        arguments["any_word"] = " | ".join(dict.fromkeys(
            str(arguments[f"q{index}"]) for index in range(len(terms))))
        return ", ".join(frequencies), " + ".join(terms), arguments

    def _stemmed(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Each word's stems (``document_counts`` keeps them), read where not kept yet.
        A copy: another recall may clear the kept ones meanwhile."""
        kept = dict(self._stems)
        missing = [word for word in words if word not in kept]
        if missing:
            kept.update(self._counted(missing)[1])
        return {word: kept.get(word, ()) for word in words}

    def _own_counts(self, words: Sequence[str],
                    stems: dict[str, tuple[str, ...]]) -> dict[str, int]:
        """How many episodes hold each word in their own words (not only in the turn
        before's): FTS5's count for a word filtered to those columns."""
        counts: dict[str, int] = {}
        with self._db.read() as conn:
            for word in words:
                query = " & ".join(f"'{lexeme}':AB" for lexeme in stems[word])
                counts[word] = int(conn.execute(
                    "SELECT count(*) FROM episodes WHERE search @@ CAST(? AS tsquery)",
                    (query,)).fetchone()[0]) if query else 0
        return counts

    def similarities(self, vector: npt.NDArray[np.float32],
                     rowids: Sequence[int]) -> dict[int, float]:
        """Each listed episode's score by meaning (its best chunk's), read exactly from
        its own rows: no index walk, visibility the caller's."""
        if not rowids:
            return {}
        marks = ", ".join(f":r{index}" for index in range(len(rowids)))
        arguments: dict[str, object] = {
            "query": _vector_literal(vector),
            **{f"r{index}": rowid for index, rowid in enumerate(rowids)}}
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT episode_rowid, max(-(embedding <#> :query::vector))"
                f" FROM episode_vectors WHERE episode_rowid IN ({marks}) GROUP BY episode_rowid",
                arguments,
            ).fetchall()
        return {int(row[0]): float(row[1]) for row in rows}

    def semantic_search(
        self, vector: npt.NDArray[np.float32], viewer: Viewer, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, its best chunk's inner product with ``vector``) of the episodes
        ``viewer`` may see nearest ``vector``, best first."""
        if self._totals_now().vectors <= self._exact_up_to:
            return self._every_chunk_scored(vector, viewer, limit)
        predicate, params = sql_predicate(viewer)
        arguments: dict[str, object] = {
            **params, "query": _vector_literal(vector), "limit": limit,
        }
        # The index walks by cosine distance; candidates are scored as SQLite scores them.
        sql = (
            "WITH nearest AS MATERIALIZED (SELECT episode_rowid,"
            " -(embedding <#> :query::vector) AS similarity FROM episode_vectors"
            " ORDER BY embedding <=> :query::vector LIMIT :candidates)"
            " SELECT e.rowid, max(n.similarity) AS similarity, count(*) OVER () AS visible,"
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

    def _every_chunk_scored(self, vector: npt.NDArray[np.float32], viewer: Viewer,
                            limit: int) -> list[tuple[int, float]]:
        """The exact search, as SQLite's index makes it: the best chunks of all the viewer
        may see (no index: a plain scan of theirs), then their episodes."""
        predicate, params = sql_predicate(viewer)
        with self._db.read() as conn:
            rows = conn.execute(
                "WITH nearest AS MATERIALIZED (SELECT v.episode_rowid,"
                " -(v.embedding <#> :query::vector) AS similarity"
                " FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid"
                f" WHERE {predicate} ORDER BY similarity DESC, v.rowid LIMIT :chunks)"
                " SELECT episode_rowid, max(similarity) AS best FROM nearest"
                " GROUP BY episode_rowid ORDER BY best DESC, episode_rowid LIMIT :limit",
                {**params, "query": _vector_literal(vector), "limit": limit,
                 "chunks": limit * EXACT_CHUNKS_PER_EPISODE},
            ).fetchall()
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
