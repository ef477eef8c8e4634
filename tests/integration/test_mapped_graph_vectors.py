"""A large store's vectors are read from the graph saved beside it (memory-mapped), not
loaded, by the next process; an older Thoth's graph without them gets them once; and
recall is the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from layers.episodic.episode import Episode
from layers.episodic.memory import EpisodicMemory
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.places import Viewer
from layers.shared.storage.engines import open_sqlite
from tests.fakes import TopicEmbedder

VIEWER = Viewer("T1", "C1")


def _opened(path: Path) -> EpisodicMemory:
    return EpisodicMemory(open_sqlite(path, schemas=LAYER_SCHEMAS), TopicEmbedder(),
                          graph_path=path.with_name(path.name + ".hnsw"))


def _found(memory: EpisodicMemory, query: str) -> list[tuple[str, float]]:
    return [(hit.episode.id, round(hit.score, 5))
            for hit in memory.recall(query, VIEWER, k=5, now=2_000_000_000.0)]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, EpisodicMemory]:
    """1,200 episodes, past the (lowered) size that gets a graph, and the graph saved by
    the process that stored them (which holds every vector in memory)."""
    import layers.episodic.vector_index as vector_index

    monkeypatch.setattr(vector_index, "APPROXIMATE_FROM", 1000)
    monkeypatch.setattr(vector_index, "FIRST_ASK_PER_EPISODE", 2)
    path = tmp_path / "thoth.db"
    first = _opened(path)
    first.remember([Episode(f"e{n}", f"topic{n % 40} note number {n}", "", 1_700_000_000.0 + n,
                            team="T1", channel="C1") for n in range(1200)])
    first.recall("topic7 note", VIEWER, k=3)
    assert first.vector_graph_ready(60)
    return path, first


def test_the_next_process_maps_the_saved_vectors_and_recalls_the_same(
    store: tuple[Path, EpisodicMemory],
) -> None:
    path, first = store
    graph = path.with_name("thoth.db.hnsw")
    assert (graph / "vectors.f16").stat().st_size == 1200 * 384 * 2
    assert oct((graph / "vectors.f16").stat().st_mode & 0o777) == "0o600"
    assert first._loaded_index()._tiers.mapped == 0
    expected = _found(first, "topic7 note number 7")
    again = _opened(path)
    index = again._loaded_index()
    assert index._tiers.mapped == 1200 and index.dead_slots == 0
    assert index.graph is not None and not index.graph_is_stale()
    assert _found(again, "topic7 note number 7") == expected
    assert expected[0][0] == "e7"
    # Forgetting deletes the saved graph (its file holds the vector), and lets go of the
    # map: a deleted file still mapped would keep the vector on disk.
    del index  # (this test's own hold on it)
    assert again.forget("e7")
    assert not graph.exists()
    assert not _maps_a_deleted_file(graph)
    assert "e7" not in [found for found, _ in _found(again, "topic7 note number 7")]
    assert again._loaded_index()._tiers.mapped == 0


def _maps_a_deleted_file(folder: Path) -> bool:
    """Whether this process still maps a file of ``folder`` that is deleted."""
    import gc

    gc.collect()  # the index let go holds the maps until it is collected
    maps = Path("/proc/self/maps").read_text(encoding="utf-8")
    return any(str(folder) in line and "(deleted)" in line for line in maps.splitlines())


def test_a_graph_saved_without_its_vectors_is_saved_again_with_them(
    store: tuple[Path, EpisodicMemory], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An older Thoth saved the graph alone: it is used as it is (the vectors loaded),
    and written again with them for the next process, without being built again."""
    import layers.episodic.approximate_index as approximate_index

    def never_built(*_: object) -> None:
        raise AssertionError("built, not saved again")

    monkeypatch.setattr(approximate_index.ApproximateIndex, "built", never_built)
    path, _ = store
    graph = path.with_name("thoth.db.hnsw")
    (graph / "vectors.f16").unlink()
    older = _opened(path)
    found = _found(older, "topic9 note number 9")
    assert older.vector_graph_ready(30)
    index = older._loaded_index()
    assert index._tiers.mapped == 0 and index.graph is not None
    assert (graph / "vectors.f16").stat().st_size == 1200 * 384 * 2
    mapped = _opened(path)
    assert _found(mapped, "topic9 note number 9") == found
    assert found[0][0] == "e9"
    assert mapped._loaded_index()._tiers.mapped == 1200
