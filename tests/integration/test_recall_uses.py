"""Which turns recalled an episode: recorded per episode, newest first, gone with it —
on each engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from layers.episodic.episode import Episode
from layers.episodic.memory import EpisodicMemory
from layers.episodic.recall_uses import RecallUse
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.places import Place
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from tests.fakes import HashingEmbedder

OpenDatabase = Callable[[Sequence[Schema]], Database]


def test_a_recall_is_kept_per_episode_and_forgotten_with_it(
    open_database: OpenDatabase, hashing_embedder: HashingEmbedder
) -> None:
    memory = EpisodicMemory(open_database(LAYER_SCHEMAS), hashing_embedder)
    memory.remember([Episode(f"e{n}", f"the deploy runbook, part {n}", "", 1_790_000_000.0 + n,
                             team="T1", channel="C1") for n in range(3)])
    in_dm = Place("T1", "D1", "im")
    assert memory.uses.record(["e0", "e1", "gone"], RecallUse("s1", in_dm, "U1", 10.0)) == 2
    memory.uses.record(["e0"], RecallUse("s2", Place("T1", "C1"), None, 20.0))
    assert memory.uses.of("e0") == [RecallUse("s2", Place("T1", "C1"), None, 20.0),
                                    RecallUse("s1", in_dm, "U1", 10.0)]
    assert memory.uses.of("e2") == []
    assert memory.forget("e0")
    assert memory.uses.of("e0") == []
    assert [use.session_id for use in memory.uses.of("e1")] == ["s1"]
