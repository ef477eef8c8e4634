"""`thoth episodes backfill` on each engine: episodes stored before episodic migration 6
get the turn before's words and sentence units, a batch at a time, answering throughout;
those stored before migration 10, the names they call people by."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

import layers.episodic.backfill as backfill_module
import layers.episodic.store as store_module
from bridge.settings import Settings
from layers.episodic.chunking import episode_units
from layers.episodic.episode import Episode
from layers.episodic.memory import EpisodicMemory
from layers.episodic.store import VECTOR_DTYPE
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.places import Viewer
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from tests.fakes import HashingEmbedder

OpenDatabase = Callable[[Sequence[Schema]], Database]
AT = 1_700_000_000.0
TURNS = [
    ("q1", "Which port does the flamingo proxy listen on these days?", 0.0),
    ("a1", "It is 8443 since the move. The old 8080 is closed for good.", 10.0),
    ("q2", "Who owns the pelican gateway now?", 20.0),
    ("a2", "Ravi does, since March. Ask him before changing it.", 30.0),
    ("q3", "Thanks!", 40.0),
]


class Stopped(Exception):
    pass


def _before_migration_6() -> list[Schema]:
    return [schema if schema.owner != "episodic" else Schema(schema.owner, schema.migrations[:5])
            for schema in LAYER_SCHEMAS]


def _store_as_before(db: Database, embedder: HashingEmbedder) -> None:
    """The turns as the store wrote them before migration 6: one whole-turn vector each."""
    with db.write() as conn:
        for id_, text, seconds in TURNS:
            rowid = conn.execute(
                "INSERT INTO episodes (id, user_text, summary, created_at, team, channel,"
                " channel_type, thread_ts, user_name, embedding_model)"
                " VALUES (?, ?, '', ?, 'T1', 'C1', 'public', '1.1', 'Dana', ?) RETURNING rowid",
                (id_, text, AT + seconds, embedder.model_id),
            ).fetchone()[0]
            vector = embedder.embed([f"Dana: {text}"])[0]
            conn.execute("INSERT INTO episode_vectors (episode_rowid, chunk, vector)"
                         " VALUES (?, 0, ?)", (rowid, vector.astype(VECTOR_DTYPE).tobytes()))


def test_old_episodes_are_backfilled_a_batch_at_a_time_and_answer_throughout(
    open_database: OpenDatabase, hashing_embedder: HashingEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = open_database(_before_migration_6())
    _store_as_before(old, hashing_embedder)
    db = open_database(LAYER_SCHEMAS)
    # The bridge, its index loaded before the backfill, and the backfill beside it (a
    # second connection stands in for its process).
    memory = EpisodicMemory(db, hashing_embedder)
    assert memory.recall("flamingo proxy port", Viewer("T1", "C1"), k=1)[0].episode.id == "q1"
    loaded = memory._loaded_index()
    backfill = EpisodicMemory(open_database(LAYER_SCHEMAS), hashing_embedder).backfill
    assert [(o.task, o.episodes) for o in backfill.owed()] == [
        ("turn_before", 5), ("sentence_units", 5), ("names_called", 5)]

    monkeypatch.setattr(backfill_module, "BATCH_EPISODES", 2)
    batches: list[int] = []

    def stop_after_four(count: int) -> None:
        batches.append(count)
        if len(batches) == 4:
            raise Stopped

    with pytest.raises(Stopped):
        backfill.run(on_batch=stop_after_four)
    assert batches == [2, 2, 1, 2]
    # Stopped half-way through: the turn before's words are all in, units for two turns.
    assert [(o.task, o.episodes) for o in backfill.owed()] == [
        ("sentence_units", 3), ("names_called", 5)]
    assert {hit.episode.id for hit in memory.recall(
        "flamingo proxy port", Viewer("T1", "C1"), k=2)} == {"q1", "a1"}
    assert backfill.run() == 3 + 5
    assert backfill.owed() == [] and backfill.run() == 0

    # Each episode now as a new one would be stored.
    fresh = EpisodicMemory(open_database(LAYER_SCHEMAS), hashing_embedder)
    with db.read() as conn:
        stored = {str(row[0]): (str(row[1]), row[2]) for row in conn.execute(
            "SELECT e.id, e.turn_before, (SELECT p.id FROM episodes p"
            " WHERE p.rowid = e.turn_before_rowid) FROM episodes e").fetchall()}
        vectors = {str(row[0]): int(row[1]) for row in conn.execute(
            "SELECT e.id, count(*) FROM episode_vectors v JOIN episodes e"
            " ON e.rowid = v.episode_rowid GROUP BY e.id").fetchall()}
    texts = dict((id_, text) for id_, text, _ in TURNS)
    assert stored == {"q1": ("", None), "a1": (texts["q1"], "q1"), "q2": (texts["a1"], "a1"),
                      "a2": (texts["q2"], "q2"), "q3": (texts["a2"], "a2")}
    assert vectors == {id_: len(episode_units(text, "", "Dana")) for id_, text in texts.items()}
    assert vectors["a1"] == vectors["a2"] == 2 and vectors["q1"] == 1
    # The running index took the new vectors in place of the old, without a rebuild, read
    # a vector a batch: each episode's units straddle batches.
    monkeypatch.setattr(store_module, "VECTOR_LOAD_BATCH", 1)
    index = memory._loaded_index()
    assert index is loaded or db.dialect == "postgresql"  # (no index in process there)
    assert len(index) == sum(vectors.values()) == fresh._loaded_index().__len__()
    a1 = memory.store.rowid_of("a1")
    assert index.holds(a1, hashing_embedder.embed(episode_units(texts["a1"], "", "Dana"))
                       .astype(VECTOR_DTYPE))
    # An answer found by its own sentence now.
    assert memory.recall("8080 closed", Viewer("T1", "C1"), k=1)[0].episode.id == "a1"
    assert np.isfinite(memory.recall("Ravi", Viewer("T1", "C1"), k=1)[0].score)


def test_the_names_people_were_called_by_before_migration_10_are_read_by_the_backfill(
    open_database: OpenDatabase, hashing_embedder: HashingEmbedder
) -> None:
    old = open_database([schema if schema.owner != "episodic"
                         else Schema(schema.owner, schema.migrations[:9])
                         for schema in LAYER_SCHEMAS])
    said = [("U1", "Emi", "Hi!"), ("U2", "Ari", "Hey Kate! How was skiing?"),
            ("U1", "Emi", "Cold but fun."), ("U2", "Ari", "Good night Kate!")]
    with old.write() as conn:
        for index, (user, name, text) in enumerate(said):
            conn.execute(
                "INSERT INTO episodes (id, user_text, summary, created_at, team, channel,"
                ' channel_type, thread_ts, "user", user_name, embedding_model)'
                " VALUES (?, ?, '', ?, 'T1', 'C1', 'private', '1.1', ?, ?, ?)",
                (f"t{index}", text, AT + index, user, name, hashing_embedder.model_id))
    memory = EpisodicMemory(open_database(LAYER_SCHEMAS), hashing_embedder)
    assert memory.store.people_called("T1", "C1", ["kate"]) == {}
    assert [(o.task, o.episodes) for o in memory.backfill.owed()] == [("names_called", 4)]
    assert memory.backfill.run() == 4 and memory.backfill.owed() == []
    assert memory.store.people_called("T1", "C1", ["kate"]) == {"kate": {"Emi": 2}}
    assert memory.backfill.run() == 0  # read once: a second run adds nothing


def test_a_store_made_new_owes_nothing(open_database: OpenDatabase,
                                       hashing_embedder: HashingEmbedder) -> None:
    memory = EpisodicMemory(open_database(LAYER_SCHEMAS), hashing_embedder)
    memory.remember([Episode("e", "One sentence here. And another one here.", "", AT,
                             team="T1", channel="C1")])
    assert memory.backfill.owed() == [] and memory.backfill.run() == 0


def test_doctor_tells_of_the_backfill_and_the_command_does_it(settings: Settings) -> None:
    from bridge.all_tables import ALL_SCHEMAS
    from layers.shared.storage.engines import open_sqlite
    from tests.integration.test_cli_skills import thoth

    settings.thoth_home.mkdir(parents=True, exist_ok=True)
    old = open_sqlite(settings.db_path, schemas=[
        schema if schema.owner != "episodic" else Schema(schema.owner, schema.migrations[:5])
        for schema in ALL_SCHEMAS])
    _store_as_before(old, HashingEmbedder())
    old.close()
    code, out, _ = thoth(settings, "doctor")
    assert code == 0, out
    assert ("warn  recall     episodes stored before this version lack turn before (5),"
            " sentence units (5)") in out
    assert "thoth episodes backfill" in out
    code, out, _ = thoth(settings, "episodes", "backfill")
    assert (code, out) == (0, "to do: turn_before for 5 episodes, sentence_units for 5 episodes,"
                              " names_called for 5 episodes\nbackfilled 15 episode tasks\n")
    assert "warn  recall" not in thoth(settings, "doctor")[1]
    assert thoth(settings, "episodes", "backfill")[1] == (
        "nothing to backfill: every episode is stored as new ones are\n")


def test_the_backfill_borrows_only_words_seen_by_everyone_who_sees_the_turn(
    open_database: OpenDatabase, hashing_embedder: HashingEmbedder,
) -> None:
    old = open_database(_before_migration_6())
    with old.write() as conn:
        conn.executemany(
            "INSERT INTO episodes (id, user_text, summary, created_at, team, channel,"
            " channel_type, \"user\", embedding_model) VALUES (?, ?, '', ?, 'T1', 'X', ?, ?,"
            " 'm')",
            [("anas-dm", "my salary is flamingo", AT, "im", "U1"),
             ("bens-dm", "what about it", AT + 10, "im", "U2"),
             ("now-public", "and then", AT + 20, "public", "U3"),
             ("anas-next", "is that right", AT + 30, "im", "U1")],
        )
    db = open_database(LAYER_SCHEMAS)
    EpisodicMemory(db, hashing_embedder).backfill.run()
    with db.read() as conn:
        borrowed = dict(conn.execute("SELECT id, turn_before FROM episodes").fetchall())
    assert borrowed == {"anas-dm": "", "bens-dm": "", "now-public": "",
                        "anas-next": "my salary is flamingo"}
