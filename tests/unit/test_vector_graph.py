"""The HNSW graph under the in-memory vector index: what it finds is what the exact scan
finds, for every viewer, through removals, additions, a save and a restore."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from layers.episodic.approximate_index import ApproximateIndex, forget_saved
from layers.episodic.vector_index import ChunkOwner, VectorIndex, VectorsOf
from layers.shared.places import Viewer

DIM = 384
EPISODES = 3000


def _unit(rng: np.random.Generator, count: int) -> npt.NDArray[np.float32]:
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _clustered(rng: np.random.Generator, count: int) -> npt.NDArray[np.float32]:
    """Vectors around 100 topics, as sentence embeddings are (uniformly random ones in 384
    dimensions have no near neighbours for any index to find)."""
    topics = _unit(rng, 100)
    vectors = topics[rng.integers(0, 100, count)] + 0.04 * rng.normal(size=(count, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _owner(episode: int) -> ChunkOwner:
    if episode % 600 == 0:  # five episodes of another workspace
        return ChunkOwner(episode, "T2", "C1", "public", "U1")
    return ChunkOwner(episode, "T1", f"C{episode % 7}", "public", f"U{episode % 11}")


@pytest.fixture
def built() -> tuple[VectorIndex, npt.NDArray[np.float32]]:
    """3,000 episodes of two vectors each (their rows 10, 20, … in the table), under a
    graph."""
    rng = np.random.default_rng(5)
    vectors = _clustered(rng, 2 * EPISODES)
    index = VectorIndex(DIM)
    owners = [_owner(episode) for episode in range(EPISODES) for _ in range(2)]
    index.add(owners, vectors, np.arange(1, 2 * EPISODES + 1, dtype=np.int64) * 10)
    index.attach(ApproximateIndex.built(DIM, *_snapshot(index)))
    return index, vectors


def _snapshot(index: VectorIndex) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                            VectorsOf]:
    slots, rows, vectors_of = index.snapshot()
    return rows, slots, vectors_of


def _saved(index: VectorIndex, path: Path) -> None:
    """Save the index's graph with its vectors, as memory.py does."""
    vectors = index.graph_vectors()
    assert index.graph is not None and vectors is not None
    index.graph.save(path, vectors)


def _overlap(index: VectorIndex, queries: npt.NDArray[np.float32], viewer: Viewer,
             limit: int = 10) -> float:
    """How much of the exact scan's best ``limit`` episodes the search finds."""
    found = 0
    for query in queries:
        exact = {rowid for rowid, _ in index._exact(query, viewer, limit)}
        found += len(exact & {rowid for rowid, _ in index.search(query, viewer, limit)})
    return found / (limit * len(queries))


def _near(vectors: npt.NDArray[np.float32], rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """Queries near some stored vectors, as questions are near what answers them."""
    picked = vectors[rng.integers(0, len(vectors), 30)] + 0.03 * _unit(rng, 30)
    return picked / np.linalg.norm(picked, axis=1, keepdims=True)


def test_the_graph_finds_what_the_exact_scan_finds_scored_exactly(
    built: tuple[VectorIndex, npt.NDArray[np.float32]],
) -> None:
    index, vectors = built
    queries = _near(vectors, np.random.default_rng(6))
    viewer = Viewer("T1", "C1")
    assert index.graph is not None and not index.graph_is_stale()
    assert _overlap(index, queries, viewer) >= 0.95
    # Each found episode's score is its best chunk's exact cosine.
    for rowid, score in index.search(queries[0], viewer, 5):
        assert score == pytest.approx(float(np.max(vectors[[2 * rowid, 2 * rowid + 1]]
                                                   .astype(np.float16) @ queries[0])), abs=1e-5)


def test_a_viewer_who_may_see_few_still_gets_them_and_no_more(
    built: tuple[VectorIndex, npt.NDArray[np.float32]],
) -> None:
    """Five of 3,000 episodes are another workspace's: its people get those five (the
    search widens past what the graph's nearest hold), nobody else gets any."""
    index, vectors = built
    theirs = {0, 600, 1200, 1800, 2400}
    found = {rowid for rowid, _ in index.search(vectors[7], Viewer("T2", "C9"), 10)}
    assert found == theirs
    assert theirs.isdisjoint(
        {rowid for rowid, _ in index.search(vectors[0], Viewer("T1", "C1"), 100)})


def test_forgotten_vectors_are_never_found_and_new_ones_are_at_once(
    built: tuple[VectorIndex, npt.NDArray[np.float32]],
) -> None:
    index, vectors = built
    viewer = Viewer("T1", "C1")
    target = int(index.search(vectors[101], viewer, 1)[0][0])
    index.remove([target])
    assert target not in {rowid for rowid, _ in index.search(vectors[101], viewer, 50)}
    fresh = _unit(np.random.default_rng(8), 1)  # far from every topic
    index.add([ChunkOwner(99_999, "T1", "C1", "public", "U1")], fresh, np.array([99_999_0]))
    assert index.search(fresh[0], viewer, 1)[0][0] == 99_999
    assert not index.graph_is_stale()
    index.remove(list(range(1, 800)))  # over a quarter of the graph dead
    assert index.graph_is_stale()


def test_a_saved_graph_restores_onto_vectors_loaded_in_another_order(
    built: tuple[VectorIndex, npt.NDArray[np.float32]], tmp_path: Path,
) -> None:
    index, vectors = built
    path = tmp_path / "thoth.db.hnsw"
    _saved(index, path)
    restored = ApproximateIndex.restore(path, DIM)
    assert restored is not None and len(restored) == 2 * EPISODES
    # The same vectors, loaded back to front, less the first episode (forgotten since).
    again = VectorIndex(DIM)
    order = np.arange(2 * EPISODES - 1, 1, -1)
    again.add([_owner(int(slot) // 2) for slot in order], vectors[order], (order + 1) * 10)
    again.attach(restored)
    queries = _near(vectors, np.random.default_rng(9))
    assert _overlap(again, queries, Viewer("T1", "C1")) >= 0.95
    assert not again.graph_is_stale()
    # A row that now holds another vector (SQLite reuses the highest rowids after a
    # delete) is not its old key's: that key is dead, the new vector is scanned.
    reused = VectorIndex(DIM)
    other = _unit(np.random.default_rng(11), 1)
    reused.add([_owner(int(slot) // 2) for slot in range(2 * EPISODES - 1)],
               vectors[: 2 * EPISODES - 1], np.arange(1, 2 * EPISODES) * 10)
    reused.add([ChunkOwner(77_777, "T1", "C1", "public", "U1")], other,
               np.array([2 * EPISODES * 10]))
    saved = ApproximateIndex.restore(path, DIM)
    assert saved is not None
    reused.attach(saved)
    assert reused.dead_in_graph == 1
    assert reused.search(other[0], Viewer("T1", "C1"), 1)[0][0] == 77_777
    # A graph file that is not one is set aside with a warning, not trusted.
    (path / "graph.usearch").write_bytes(b"not a graph")
    assert ApproximateIndex.restore(path, DIM) is None


def test_forgetting_deletes_the_graph_and_what_a_dead_save_left_of_one(
    built: tuple[VectorIndex, npt.NDArray[np.float32]], tmp_path: Path,
) -> None:
    index, _ = built
    assert index.graph is not None
    path = tmp_path / "thoth.db.hnsw"
    # An older Thoth saved the graph as one file: a save replaces it with the folder.
    path.write_bytes(b"an older single-file graph")
    _saved(index, path)
    assert path.is_dir() and ApproximateIndex.restore(path, DIM) is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thoth.db.hnsw"]
    # A process that died while saving left its half-written folder and the old file.
    (tmp_path / "thoth.db.hnsw.123.part").mkdir()
    (tmp_path / "thoth.db.hnsw.123.part" / "graph.usearch").write_bytes(b"vectors")
    (tmp_path / "thoth.db.hnsw.456.old").write_bytes(b"vectors")
    (tmp_path / "thoth.db").write_bytes(b"the store itself")
    forget_saved(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thoth.db"]
