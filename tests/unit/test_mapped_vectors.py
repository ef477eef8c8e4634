"""Vectors held as float16 and, under a saved graph, read from its file: the scores are
the float32 ones of the stored values, and a saved vector that is not its key's is never
used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from layers.episodic.approximate_index import ApproximateIndex, saved_with_vectors
from layers.episodic.vector_index import ChunkOwner, VectorIndex
from layers.shared.places import Viewer

DIM = 384
EPISODES = 2000
VIEWER = Viewer("T1", "C1")


def _clustered(rng: np.random.Generator, count: int) -> npt.NDArray[np.float32]:
    topics = rng.normal(size=(50, DIM))
    vectors = topics[rng.integers(0, 50, count)] + 0.3 * rng.normal(size=(count, DIM))
    units: npt.NDArray[np.float32] = (
        vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return units


def _owners(episodes: range) -> list[ChunkOwner]:
    return [ChunkOwner(episode, "T1", f"C{episode % 5}", "public", "U1")
            for episode in episodes for _ in range(2)]


def _rows(episodes: range) -> npt.NDArray[np.int64]:
    """Two vectors an episode, at table rows 10, 20, … (episode e's at 20e+10, 20e+20)."""
    return np.arange(2 * episodes.start + 1, 2 * episodes.stop + 1, dtype=np.int64) * 10


@pytest.fixture
def vectors() -> npt.NDArray[np.float32]:
    return _clustered(np.random.default_rng(21), 2 * EPISODES)


@pytest.fixture
def saved(vectors: npt.NDArray[np.float32], tmp_path: Path) -> tuple[VectorIndex, Path]:
    """An index of every vector in memory, with a graph saved beside it as memory.py does."""
    index = VectorIndex(DIM)
    index.add(_owners(range(EPISODES)), vectors, _rows(range(EPISODES)))
    slots, rows, vectors_of = index.snapshot()
    index.attach(ApproximateIndex.built(DIM, rows, slots, vectors_of))
    key_vectors = index.graph_vectors()
    assert index.graph is not None and key_vectors is not None
    path = tmp_path / "thoth.db.hnsw"
    index.graph.save(path, key_vectors)
    return index, path


def _mapped(path: Path) -> VectorIndex:
    restored = ApproximateIndex.restore(path, DIM)
    assert restored is not None and restored.vectors is not None
    index = VectorIndex(DIM)
    index.map_graph(restored)
    return index


def test_float16_vectors_score_as_their_values_widened_to_float32(
    vectors: npt.NDArray[np.float32],
) -> None:
    """The index holds what the store keeps (float16) and scores in float32: the same
    scores, in the same order, as a float32 product over the rounded vectors (what the
    index held before), on the exact scan (widened 1,024 rows at a time) and on
    similarities."""
    index = VectorIndex(DIM)
    index.add(_owners(range(EPISODES)), vectors, _rows(range(EPISODES)))
    rounded = vectors.astype(np.float16).astype(np.float32)
    query = vectors[17] + 0.1 * vectors[900]
    query /= np.linalg.norm(query)
    expected = np.maximum(rounded[0::2] @ query, rounded[1::2] @ query)
    best = np.argsort(-expected, kind="stable")[:20]  # every channel is public: all seen
    found = index._exact(query, VIEWER, 20)
    assert [rowid for rowid, _ in found] == best.tolist()
    assert [score for _, score in found] == pytest.approx(expected[best].tolist(), abs=1e-6)
    assert index.similarities(query, [3, 4]) == pytest.approx(
        {3: float(expected[3]), 4: float(expected[4])}, abs=1e-6)
    assert index.holds(3, vectors[6:8]) and not index.holds(3, vectors[8:10])


def test_a_saved_graph_lends_its_vectors_and_none_is_loaded_into_memory(
    saved: tuple[VectorIndex, Path], vectors: npt.NDArray[np.float32],
) -> None:
    """Loaded onto the saved graph, every vector is claimed from the map (no slot in
    memory, none dead), and searches give what the index that held them all gave."""
    held, path = saved
    assert saved_with_vectors(path)
    index = _mapped(path)
    index.add(_owners(range(EPISODES)), vectors, _rows(range(EPISODES)))
    assert len(index) == 2 * EPISODES and index._size == 2 * EPISODES
    assert index.dead_slots == 0 and index.dead_in_graph == 0
    assert not index.graph_is_stale()
    rng = np.random.default_rng(22)
    for query in vectors[rng.integers(0, len(vectors), 10)]:
        assert index.search(query, VIEWER, 10) == held.search(query, VIEWER, 10)
        assert index._exact(query, VIEWER, 10) == held._exact(query, VIEWER, 10)
    # Added after the save: held in memory, searched at once; a mapped one forgotten is
    # found no more.
    fresh = _clustered(np.random.default_rng(23), 2)
    index.add(_owners(range(EPISODES, EPISODES + 1)), fresh, _rows(range(EPISODES, EPISODES + 1)))
    assert index._size == 2 * EPISODES + 2
    assert index.search(fresh[0], VIEWER, 1)[0][0] == EPISODES
    target = index.search(vectors[41], Viewer("T1", "C0"), 1)[0][0]
    index.remove([target])
    assert target not in {rowid for rowid, _ in index.search(vectors[41], Viewer("T1", "C0"), 50)}
    assert index.dead_in_graph == 2 and index.dead_slots == 0


def test_a_vector_changed_since_the_save_is_loaded_and_its_key_stays_dead(
    saved: tuple[VectorIndex, Path], vectors: npt.NDArray[np.float32],
) -> None:
    """A row whose vector is not the one the graph was built from (a backfill stored it
    anew) is held in memory and scored as it is now; its key is never used."""
    _, path = saved
    index = _mapped(path)
    changed = vectors.copy()
    changed[10] = _clustered(np.random.default_rng(24), 1)[0]
    index.add(_owners(range(EPISODES)), changed, _rows(range(EPISODES)))
    assert index.dead_in_graph == 1 and index._size == 2 * EPISODES + 1
    found = index.search(changed[10], Viewer("T1", "C0"), 1)
    assert found[0][0] == 5
    assert found[0][1] == pytest.approx(
        float(changed[10].astype(np.float16).astype(np.float32) @ changed[10]), abs=1e-6)


def test_a_saved_vector_that_is_not_its_keys_is_never_scored(
    saved: tuple[VectorIndex, Path], vectors: npt.NDArray[np.float32],
) -> None:
    """A saved file damaged after the graph was saved: the damaged key's row is loaded
    from the database into memory, not read from the file."""
    _, path = saved
    with (path / "vectors.f16").open("r+b") as file:
        file.seek(7 * DIM * 2)
        file.write(np.full(DIM, 0.5, dtype="<f2").tobytes())
    index = _mapped(path)
    index.add(_owners(range(EPISODES)), vectors, _rows(range(EPISODES)))
    assert index.dead_in_graph == 1 and index._size == 2 * EPISODES + 1
    score = index.similarities(vectors[7], [3])[3]
    assert score == pytest.approx(
        float(vectors[7].astype(np.float16).astype(np.float32) @ vectors[7]), abs=1e-6)


def test_a_graph_saved_without_its_vectors_restores_unmapped(
    saved: tuple[VectorIndex, Path],
) -> None:
    """An older Thoth saved no vectors, or a file of the wrong size: the graph restores
    (memory.py matches it to the vectors it loads) but lends none."""
    _, path = saved
    (path / "vectors.f16").write_bytes(b"\0" * 10)
    short = ApproximateIndex.restore(path, DIM)
    assert short is not None and short.vectors is None
    (path / "vectors.f16").unlink()
    assert not saved_with_vectors(path)
    restored = ApproximateIndex.restore(path, DIM)
    assert restored is not None and restored.vectors is None
    with pytest.raises(ValueError, match="with its vectors"):
        VectorIndex(DIM).map_graph(restored)


def test_a_save_deletes_what_a_process_that_ended_mid_save_left(
    saved: tuple[VectorIndex, Path],
) -> None:
    """A ``thoth recall`` that ends while its thread saves leaves a ``.part`` as big as
    the graph: the next save deletes it, and leaves a running process's alone."""
    index, path = saved
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    left = path.with_name(f"{path.name}.{dead}.part")
    left.mkdir()
    (left / "vectors.f16").write_bytes(b"\0" * 1024)
    running = path.with_name(f"{path.name}.{os.getppid()}.part")
    running.mkdir()
    key_vectors = index.graph_vectors()
    assert index.graph is not None and key_vectors is not None
    index.graph.save(path, key_vectors)
    assert not left.exists() and running.exists()
    assert saved_with_vectors(path)
