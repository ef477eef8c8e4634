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
- Saved beside the database as a folder (``thoth.db.hnsw/``: the graph, its keys and
  its vectors as stored), written under a name of this process's own and renamed into
  place, so a reader finds the whole set or none. Owner-only, like the database.
  Forgetting an episode deletes the saved graph (memory.py): a forgotten vector never
  stays on disk.
- Restored, the graph and its saved vectors (float16, in key order: what the index
  scores the graph's candidates with) are memory-mapped, not read into the process's own
  memory (issue 54). What a search touches becomes resident as clean file pages, which
  the kernel may drop and read again; the rest stays on disk. Measured at 100k episodes
  (docs/benchmarks.md): one ``thoth recall`` peaked at 413-423 MB, against 620-627 MB
  with the graph loaded and the vectors held as float16 (804-810 MB before: float32).
  But the kernel maps 64 KB around each page a search faults in (fault-around; madvise
  RANDOM does not stop it), and a search scores a few thousand vectors scattered over
  the file: after some hundred searches nearly every page is resident (``recall
  --batch`` of 300 questions: 583 MB; the benchmark's 1,300: 536 MB, of which 349 file
  pages). Reading each candidate with ``pread`` instead kept them out of RSS but cost
  1.4 ms for 800 vectors, more than scoring them; so the map it is. usearch's ``view``
  reads every node's header when it opens (the links, about a quarter of the file), so
  those pages are resident from the start.
- Each saved vector is checked against its key's fingerprint when restored (read in
  slices, not through the map: checking must not make every page resident); a key
  whose saved vector does not match is never used. A graph saved by an older Thoth has
  no vectors: it is used as before (memory.py saves it again with them).
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numkong
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
PRINT_SLICE = 1_024
_GRAPH_FILE = "graph.usearch"
_KEYS_FILE = "keys.npy"
# The graph's vectors, float16 little-endian, one row a key: a plain file to map.
_VECTORS_FILE = "vectors.f16"
VECTOR_DTYPE = np.dtype("<f2")
# A function giving the vectors of keys ``start`` to ``end`` (float16), for ``save``.
KeyVectors = Callable[[int, int], npt.NDArray[np.float16]]


class ApproximateIndex:
    """An HNSW graph whose keys map to rows of ``episode_vectors``."""

    def __init__(self, dim: int, graph: Index | None = None,
                 keys: npt.NDArray[np.int64] | None = None,
                 vectors: npt.NDArray[np.float16] | None = None) -> None:
        self.dim = dim
        self._graph = graph if graph is not None else _new_graph(dim)
        # Two rows: each key's episode_vectors row, and its vector's fingerprint.
        self._keys = keys if keys is not None else np.zeros((2, 0), dtype=np.int64)
        # A restored graph's saved vectors, one row a key, memory-mapped (read-only).
        self.vectors = vectors
        # Restored from disk: its files are read in place (usearch's view), not copied.
        self.restored = graph is not None

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
        self._graph.add(keys, widened(np.asarray(vectors, dtype=np.float16)),
                        threads=os.cpu_count() or 1)
        added = np.stack([np.asarray(rows, dtype=np.int64), fingerprints(vectors)])
        self._keys = np.concatenate([self._keys, added], axis=1)

    @classmethod
    def built(cls, dim: int, rows: npt.NDArray[np.int64], slots: npt.NDArray[np.int64],
              vectors_of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float16]],
              ) -> ApproximateIndex:
        """A graph of the vectors in ``slots`` (``vectors_of`` gives them; they are
        ``rows`` of the table), added a slice at a time so no copy of them all is made."""
        graph = cls(dim)
        for start in range(0, len(slots), BUILD_SLICE):
            part = slots[start : start + BUILD_SLICE]
            graph.add(rows[start : start + BUILD_SLICE], vectors_of(part))
        return graph

    def nearest(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """The keys of about the ``count`` nearest vectors, nearest first."""
        found = self._graph.search(query, count, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    def save(self, path: Path, vectors: KeyVectors) -> None:
        """Write the graph, its keys and their vectors (``vectors(start, end)``: those of
        keys ``start`` to ``end``) as the folder ``path``, replacing any older one."""
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        _remove(part)
        _remove_left_by_the_dead(path)
        part.mkdir(mode=0o700)
        self._graph.save(str(part / _GRAPH_FILE))
        np.save(part / _KEYS_FILE, self._keys)
        with (part / _VECTORS_FILE).open("wb") as writer:
            for start in range(0, len(self), BUILD_SLICE):
                end = min(start + BUILD_SLICE, len(self))
                block = np.ascontiguousarray(vectors(start, end), dtype=VECTOR_DTYPE)
                if block.shape != (end - start, self.dim):
                    raise ValueError(f"expected {end - start} vectors, got {block.shape}")
                writer.write(block.tobytes())
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
            graph = Index.restore(str(path / _GRAPH_FILE), view=True, connectivity=CONNECTIVITY,
                                  expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
            keys = np.load(path / _KEYS_FILE)
        except (OSError, ValueError, RuntimeError) as error:
            log.warning("the saved vector graph %s is unreadable (%s): building it again",
                        path, error)
            return None
        if graph is None or graph.ndim != dim or keys.shape != (2, len(graph)):
            log.warning("the saved vector graph %s does not match: building it again", path)
            return None
        keys = keys.astype(np.int64)
        return cls(dim, graph, keys, _mapped_vectors(path / _VECTORS_FILE, keys, dim))


def _mapped_vectors(file: Path, keys: npt.NDArray[np.int64],
                    dim: int) -> npt.NDArray[np.float16] | None:
    """The saved vectors, memory-mapped; a key whose saved vector is not the one it was
    built from gets the row -1, which no vector has (so it is never used). None when there
    is no such file (an older Thoth saved none) or it is not one row a key."""
    count = keys.shape[1]
    width = dim * VECTOR_DTYPE.itemsize
    try:
        if not file.exists() or file.stat().st_size != count * width:
            return None
        mismatched: list[npt.NDArray[np.int64]] = []
        with file.open("rb") as reader:
            for start in range(0, count, PRINT_SLICE):
                end = min(start + PRINT_SLICE, count)
                block = np.frombuffer(reader.read((end - start) * width), dtype=VECTOR_DTYPE)
                prints = fingerprints(block.reshape(end - start, dim))
                mismatched.append(start + np.flatnonzero(prints != keys[1, start:end]))
        if count == 0:
            return np.zeros((0, dim), dtype=VECTOR_DTYPE)
        mapped: npt.NDArray[np.float16] = np.memmap(file, dtype=VECTOR_DTYPE, mode="r",
                                                    shape=(count, dim))
    except (OSError, ValueError) as error:
        log.warning("the saved vectors %s are unreadable (%s): loading them from the database",
                    file, error)
        return None
    wrong = np.concatenate([np.zeros(0, dtype=np.int64), *mismatched])
    if len(wrong):
        log.warning("%d saved vectors in %s are not their keys': not used", len(wrong), file)
        keys[0, wrong] = -1
    return mapped


def saved_with_vectors(path: Path) -> bool:
    """Whether a graph is saved at ``path`` with its vectors (an older Thoth's has none)."""
    return (path / _VECTORS_FILE).exists()


def forget_saved(path: Path) -> None:
    """Delete the saved graph (it holds vectors that were just forgotten), and what any
    process left of one while saving (its ``.part`` or ``.old``, if it died there)."""
    for leftover in [path, *path.parent.glob(f"{glob.escape(path.name)}.*.part"),
                     *path.parent.glob(f"{glob.escape(path.name)}.*.old")]:
        _remove(leftover)


def _remove_left_by_the_dead(path: Path) -> None:
    """Delete what processes no longer running left of a save (a ``thoth recall`` that
    ends while its thread saves the graph leaves a ``.part`` the size of the graph)."""
    for leftover in [*path.parent.glob(f"{glob.escape(path.name)}.*.part"),
                     *path.parent.glob(f"{glob.escape(path.name)}.*.old")]:
        pid = leftover.name[len(path.name) + 1 :].split(".")[0]
        if pid.isdigit() and not _running(int(pid)):
            _remove(leftover)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: running
        return True
    return True


def _remove(path: Path) -> None:
    """Delete ``path``, a folder or a file (an older Thoth saved the graph as one file)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def widened(vectors: npt.NDArray[np.float16],
            out: npt.NDArray[np.float32] | None = None) -> npt.NDArray[np.float32]:
    """float16 rows as float32, exactly the same values (into ``out`` if given).

    numkong (usearch's SIMD kernels, installed with it) widens: numpy's own float16
    cast took 35 ms for 50k vectors, five times the float32 product it feeds."""
    if out is None:
        out = np.empty(vectors.shape, dtype=np.float32)
    if vectors.size:
        numkong.astype(np.ascontiguousarray(vectors, dtype=np.float16), "float32", out=out)
    return out


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
