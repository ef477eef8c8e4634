"""An approximate nearest-neighbour graph over the in-memory vectors (usearch's HNSW).

``vector_index.py`` holds every chunk vector and scores what this finds exactly; this
only says which few thousand of millions to score. Why usearch: a maintained HNSW
with int8 storage, a Python wheel for every platform and a file format it saves and
restores (hnswlib has no wheel for Python 3.11 here and stores float32 only).

Decided:
- int8 vectors, cosine: on LoCoMo turns' sentence vectors at 50k, its best 100 held
  89% of the exact best 100 (float16: 90%) at half float16's memory; the candidates are
  rescored exactly, so only which ones are found depends on it.
- Keys are this graph's own numbers; ``key_rows`` maps each to the vector's row in
  ``episode_vectors``, which is what survives a restart. A vector forgotten since is
  left in the graph and skipped at search (the index marks it dead); the graph is built
  anew when a quarter of it is dead.
- Persisted beside the database (``thoth.db.hnsw`` and ``thoth.db.hnsw.rows.npy``),
  written to a temporary name and renamed, so a crash leaves the old one or none.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    # Imported where a graph is made (0.2 s): most commands never make one.
    from usearch.index import Index

log = logging.getLogger(__name__)

# Graph degree and build effort: usearch's defaults for connectivity; expansion_add 64
# built 50k sentence vectors in 4.8 s on two cores (0.1 ms a vector).
CONNECTIVITY = 16
EXPANSION_ADD = 64
# Search effort: 128 found 93% of the exact best 100 at 50k (64: 89%), in 0.2 ms.
EXPANSION_SEARCH = 128
# Vectors copied out of the matrix at a time while building (about 77 MB).
BUILD_SLICE = 50_000


class ApproximateIndex:
    """An HNSW graph whose keys map to rows of ``episode_vectors``."""

    def __init__(self, dim: int, graph: Index | None = None,
                 key_rows: npt.NDArray[np.int64] | None = None) -> None:
        self.dim = dim
        self._graph = graph if graph is not None else _new_graph(dim)
        self.key_rows = key_rows if key_rows is not None else np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.key_rows.shape[0])

    def add(self, rows: npt.NDArray[np.int64], vectors: npt.NDArray[Any]) -> None:
        """Add vectors (float32, unit length), each with its ``episode_vectors`` row."""
        if len(rows) == 0:
            return
        keys = np.arange(len(self), len(self) + len(rows), dtype=np.uint64)
        self._graph.add(keys, np.asarray(vectors, dtype=np.float32), threads=os.cpu_count() or 1)
        self.key_rows = np.concatenate([self.key_rows, np.asarray(rows, dtype=np.int64)])

    @classmethod
    def built(cls, dim: int, rows: npt.NDArray[np.int64], slots: npt.NDArray[np.int64],
              matrix: npt.NDArray[Any]) -> ApproximateIndex:
        """A graph of ``matrix``'s rows ``slots`` (whose vectors are ``rows`` of the
        table), added a slice at a time so no copy of the whole matrix is made."""
        graph = cls(dim)
        for start in range(0, len(slots), BUILD_SLICE):
            part = slots[start : start + BUILD_SLICE]
            graph.add(rows[start : start + BUILD_SLICE], matrix[part])
        return graph

    def nearest(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """The keys of about the ``count`` nearest vectors, nearest first."""
        found = self._graph.search(query, count, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    def save(self, path: Path) -> None:
        """Write the graph and its rows beside the database, replacing any older pair."""
        rows_path = _rows_path(path)
        graph_part = path.with_name(path.name + ".part")
        rows_part = rows_path.with_name(rows_path.name + ".part.npy")
        self._graph.save(str(graph_part))
        np.save(rows_part, self.key_rows)
        # Rows first: a graph is never read beside rows of another.
        os.replace(rows_part, rows_path)
        os.replace(graph_part, path)

    @classmethod
    def restore(cls, path: Path, dim: int) -> ApproximateIndex | None:
        """The saved graph, or None when there is none or it is unreadable (then it is
        built again from the database)."""
        from usearch.index import Index

        rows_path = _rows_path(path)
        if not path.exists() or not rows_path.exists():
            return None
        try:
            graph = Index.restore(str(path), connectivity=CONNECTIVITY,
                                  expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
            key_rows = np.load(rows_path)
        except (OSError, ValueError, RuntimeError) as error:
            log.warning("the saved vector graph %s is unreadable (%s): building it again",
                        path, error)
            return None
        if graph is None or graph.ndim != dim or len(graph) != len(key_rows):
            log.warning("the saved vector graph %s does not match: building it again", path)
            return None
        return cls(dim, graph, key_rows.astype(np.int64))


def _new_graph(dim: int) -> Index:
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype="i8", connectivity=CONNECTIVITY,
                 expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)


def _rows_path(path: Path) -> Path:
    return path.with_name(path.name + ".rows.npy")
