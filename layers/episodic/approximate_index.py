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
  ``episode_vectors`` and ``key_prints`` holds a fingerprint of the vector itself. A
  row can come to mean another vector (SQLite reuses the highest rowids after a delete;
  a database can be replaced beside its graph), so a key counts only where the row's
  vector still has its fingerprint. Keys of vectors forgotten since are dead: skipped at
  search, and the graph is built anew when a quarter of it is dead.
- Saved beside the database as a folder (``thoth.db.hnsw/``: the graph and its keys),
  written under a name of this process's own and renamed into place, so a reader finds
  the whole pair or none. Owner-only, like the database. Forgetting an episode deletes
  the saved graph (memory.py): a forgotten vector never stays on disk.
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import shutil
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
# Vectors copied out of the matrix at a time while building (about 25 MB): big enough
# to keep both cores adding, small enough not to be the process's peak memory.
BUILD_SLICE = 16_384
# Vectors fingerprinted at a time: each value widens to 8 bytes for the product (about
# 12 MB). At 50,000 a slice the widened copy was 154 MB, the most a restart held at once.
PRINT_SLICE = 4_096
_GRAPH_FILE = "graph.usearch"
_KEYS_FILE = "keys.npy"


class ApproximateIndex:
    """An HNSW graph whose keys map to rows of ``episode_vectors``."""

    def __init__(self, dim: int, graph: Index | None = None,
                 keys: npt.NDArray[np.int64] | None = None) -> None:
        self.dim = dim
        self._graph = graph if graph is not None else _new_graph(dim)
        # Two rows: each key's episode_vectors row, and its vector's fingerprint.
        self._keys = keys if keys is not None else np.zeros((2, 0), dtype=np.int64)

    def __len__(self) -> int:
        return int(self._keys.shape[1])

    @property
    def key_rows(self) -> npt.NDArray[np.int64]:
        rows: npt.NDArray[np.int64] = self._keys[0]
        return rows

    @property
    def key_prints(self) -> npt.NDArray[np.int64]:
        prints: npt.NDArray[np.int64] = self._keys[1]
        return prints

    def add(self, rows: npt.NDArray[np.int64], vectors: npt.NDArray[Any]) -> None:
        """Add vectors (float32, unit length), each with its ``episode_vectors`` row."""
        if len(rows) == 0:
            return
        keys = np.arange(len(self), len(self) + len(rows), dtype=np.uint64)
        self._graph.add(keys, np.asarray(vectors, dtype=np.float32), threads=os.cpu_count() or 1)
        added = np.stack([np.asarray(rows, dtype=np.int64), fingerprints(vectors)])
        self._keys = np.concatenate([self._keys, added], axis=1)

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
        """Write the graph and its keys as the folder ``path``, replacing any older one."""
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        _remove(part)
        part.mkdir(mode=0o700)
        self._graph.save(str(part / _GRAPH_FILE))
        np.save(part / _KEYS_FILE, self._keys)
        for file in part.iterdir():
            file.chmod(0o600)
        old = path.with_name(f"{path.name}.{os.getpid()}.old")
        if path.exists():
            path.rename(old)
        part.rename(path)
        _remove(old)

    @classmethod
    def restore(cls, path: Path, dim: int) -> ApproximateIndex | None:
        """The saved graph, or None when there is none or it is unreadable (then it is
        built again from the database)."""
        from usearch.index import Index

        if not (path / _GRAPH_FILE).exists() or not (path / _KEYS_FILE).exists():
            return None
        try:
            graph = Index.restore(str(path / _GRAPH_FILE), connectivity=CONNECTIVITY,
                                  expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
            keys = np.load(path / _KEYS_FILE)
        except (OSError, ValueError, RuntimeError) as error:
            log.warning("the saved vector graph %s is unreadable (%s): building it again",
                        path, error)
            return None
        if graph is None or graph.ndim != dim or keys.shape != (2, len(graph)):
            log.warning("the saved vector graph %s does not match: building it again", path)
            return None
        return cls(dim, graph, keys.astype(np.int64))


def forget_saved(path: Path) -> None:
    """Delete the saved graph (it holds vectors that were just forgotten), and what any
    process left of one while saving (its ``.part`` or ``.old``, if it died there)."""
    for leftover in [path, *path.parent.glob(f"{glob.escape(path.name)}.*.part"),
                     *path.parent.glob(f"{glob.escape(path.name)}.*.old")]:
        _remove(leftover)


def _remove(path: Path) -> None:
    """Delete ``path``, a folder or a file (an older Thoth saved the graph as one file)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def fingerprints(vectors: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """A 64-bit fingerprint of each vector as stored (float16 bits), a slice at a time."""
    weights = _print_weights(vectors.shape[1])
    prints = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), PRINT_SLICE):
        bits = np.asarray(vectors[start : start + PRINT_SLICE], dtype=np.float16).view(np.int16)
        prints[start : start + PRINT_SLICE] = bits.astype(np.int64) @ weights
    return prints


@functools.cache
def _print_weights(dim: int) -> npt.NDArray[np.int64]:
    """Fixed pseudo-random weights: the same fingerprint in every process and version."""
    return np.random.default_rng(384_2026).integers(1, 2**40, size=dim)


def _new_graph(dim: int) -> Index:
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype="i8", connectivity=CONNECTIVITY,
                 expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
