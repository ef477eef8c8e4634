"""Episodic memory on each engine (a real SQLite file, a real PostgreSQL with pgvector)
with the real MiniLM model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from layers.episodic.episode import Episode, Feedback
from layers.episodic.memory import EpisodicMemory, RecallQuery
from layers.episodic.pg_search import PostgresEpisodeSearch
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.errors import BadInput
from layers.shared.places import Viewer
from layers.shared.storage.database import Database
from layers.shared.storage.engines import connect_postgres
from layers.shared.storage.migrations import Schema
from tests.fakes import HashingEmbedder, TopicEmbedder
from tests.postgres import PostgresForTests

NOW = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
DAY = 86_400.0


OpenDatabase = Callable[[Sequence[Schema]], Database]


def _episode(id_: str, text: str, *, age_days: float = 1, **where: str) -> Episode:
    return Episode(id=id_, user_text=text, summary="", created_at=NOW - age_days * DAY, **where)  # type: ignore[arg-type]


def test_recall_finds_by_meaning_and_by_words(memory: EpisodicMemory) -> None:
    memory.remember(
        [
            _episode("deploy", "We ship the billing service every Friday after standup"),
            _episode("lunch", "The team lunch moved to the Thai place on Elm street"),
            _episode("vpn", "To reach staging you need the corporate VPN profile"),
        ]
    )
    by_meaning = memory.recall("when do we release payments code?", Viewer(), k=1, now=NOW)
    assert [hit.episode.id for hit in by_meaning] == ["deploy"]
    by_word = memory.recall("Elm street", Viewer(), k=1, now=NOW)
    assert [hit.episode.id for hit in by_word] == ["lunch"]


def test_old_evidence_beats_recent_noise(memory: EpisodicMemory) -> None:
    memory.remember(
        [
            _episode(
                "old",
                "Our postgres backups run nightly at 02:00 UTC to the cold bucket",
                age_days=700,
            ),
            _episode("new", "I had a nice coffee this morning", age_days=0.1),
        ]
    )
    hits = memory.recall("when do postgres backups run?", Viewer(), k=2, now=NOW)
    assert hits[0].episode.id == "old"


def test_later_parts_of_a_long_episode_are_findable(memory: EpisodicMemory) -> None:
    filler = " ".join(
        f"Paragraph {i} talks about quarterly planning and budgets." for i in range(120)
    )
    long_text = filler + " Finally: the launch codename is Bluefin and it ships in March."
    memory.remember(
        [
            _episode("long", long_text),
            _episode("other", "We discussed the onboarding checklist for new hires"),
        ]
    )
    vector_only = memory.recall("what is the launch codename?", Viewer(), k=1, now=NOW)
    assert vector_only[0].episode.id == "long"


def test_secrets_are_redacted_before_storage(memory: EpisodicMemory, db: Database) -> None:
    token = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
    memory.remember([_episode("secret", f"the bot token is {token} please keep it")])
    stored = memory.store.get("secret")
    assert stored is not None and token not in stored.user_text
    if db.dialect == "sqlite":
        raw = Path(db.where).read_bytes() + Path(db.where + "-wal").read_bytes()
        assert token.encode() not in raw
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM episodes WHERE user_text LIKE ?",
                            (f"%{token[5:20]}%",)).fetchone()[0] == 0


def test_forget_removes_text_fts_row_and_vectors(memory: EpisodicMemory, db: Database) -> None:
    memory.remember(
        [
            _episode("keep", "Alice prefers tabs over spaces"),
            _episode("gone", "The wifi password for the office guest network rotates monthly"),
        ]
    )
    assert memory.recall("guest network wifi", Viewer(), k=1, now=NOW)[0].episode.id == "gone"
    assert memory.forget("gone") is True
    assert memory.forget("gone") is False
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM episodes WHERE id = 'gone'").fetchone()[0] == 0
        words_left = (
            "SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'guest'"
            if db.dialect == "sqlite"
            else "SELECT count(*) FROM episodes WHERE search @@ plainto_tsquery('guest')"
        )
        assert conn.execute(words_left).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM episode_vectors").fetchone()[0] == 1
    # Nothing related is left: the unrelated episode does not fill the place.
    assert memory.recall("guest network wifi", Viewer(), k=5, now=NOW) == []
    hits = memory.recall("tabs or spaces", Viewer(), k=5, now=NOW)
    assert [hit.episode.id for hit in hits] == ["keep"]


def test_visibility_is_enforced_inside_search(memory: EpisodicMemory) -> None:
    memory.remember(
        [
            _episode(
                "pub",
                "the roadmap review is on Tuesday",
                team="T1",
                channel="C1",
                channel_type="public",
            ),
            _episode(
                "priv",
                "the roadmap review is secret in the war room",
                team="T1",
                channel="G1",
                channel_type="private",
            ),
            _episode(
                "dm",
                "my own roadmap review notes",
                team="T1",
                channel="D1",
                channel_type="im",
                user="U1",
            ),
            _episode(
                "other-team",
                "roadmap review at the other company",
                team="T2",
                channel="C9",
                channel_type="public",
            ),
        ]
    )

    def ids(viewer: Viewer) -> set[str]:
        return {hit.episode.id for hit in memory.recall("roadmap review", viewer, k=10, now=NOW)}

    assert ids(Viewer("T1", "C5", "public", "U2")) == {"pub"}
    assert ids(Viewer("T1", "G1", "private", "U2")) == {"pub", "priv"}
    assert ids(Viewer("T1", "D1", "im", "U1")) == {"pub", "dm"}
    assert ids(Viewer("T1", "D2", "im", "U2")) == {"pub"}
    assert ids(Viewer("T2", "C9", "public", "U1")) == {"other-team"}


def test_feedback_reorders_a_near_tie(memory: EpisodicMemory) -> None:
    memory.remember(
        [
            _episode("a", "restart the worker with make restart-worker", age_days=10),
            _episode("b", "restart the worker with make restart-worker", age_days=10),
        ]
    )
    memory.set_feedback("a", Feedback.DID_NOT_WORK)
    memory.set_feedback("b", Feedback.WORKED)
    hits = memory.recall("how do I restart the worker?", Viewer(), k=2, now=NOW)
    assert [hit.episode.id for hit in hits] == ["b", "a"]


def test_retention_purge_deletes_only_old_episodes(memory: EpisodicMemory) -> None:
    memory.remember(
        [
            _episode("ancient", "the old office was on Main street", age_days=400),
            _episode("recent", "the new office is on Oak avenue", age_days=3),
        ]
    )
    assert memory.purge_older_than(0, now=NOW) == 0
    assert memory.purge_older_than(365, now=NOW) == 1
    assert memory.store.get("ancient") is None
    assert [h.episode.id for h in memory.recall("office street", Viewer(), k=5, now=NOW)] == [
        "recent"
    ]


def test_bad_episodes_store_nothing(memory: EpisodicMemory) -> None:
    memory.remember([_episode("first", "hello there")])
    with pytest.raises(BadInput, match="limit is 40000"):
        memory.remember([_episode("ok", "fine"), _episode("huge", "x" * 50_000)])
    with pytest.raises(BadInput, match="already exists"):
        memory.remember([_episode("first", "again")])
    assert memory.store.count() == 1


def test_what_is_remembered_is_found_after_a_restart(
    db: Database, minilm: MiniLMEmbedder, open_database: OpenDatabase
) -> None:
    first = EpisodicMemory(db, minilm)
    first.remember([_episode("persisted", "the staging cluster lives in eu-west-1")])
    query = minilm.embed(["which region hosts staging?"])[0]
    before = first.recall("which region hosts staging?", Viewer(), k=1, now=NOW)
    indexed_before = first._loaded_index().search(query, Viewer(), limit=1)
    db.close()
    reopened = EpisodicMemory(open_database(LAYER_SCHEMAS), minilm)
    hits = reopened.recall("which region hosts staging?", Viewer(), k=1, now=NOW)
    assert hits[0].episode.id == "persisted"
    # The same score before and after the restart: a new vector is held as it is stored.
    assert hits[0].score == pytest.approx(before[0].score, abs=1e-6)
    assert reopened._loaded_index().search(query, Viewer(), limit=1) == indexed_before


def test_thread_context_lifts_the_reply_and_never_leaks(memory: EpisodicMemory) -> None:
    thread = {"team": "T1", "channel": "C1", "thread_ts": "100.1"}
    memory.remember(
        [
            _episode(
                "question",
                "Has anyone heard back from the vet about Biscuit?",
                age_days=3.0,
                channel_type="public",
                **thread,
            ),
            _episode(
                "answer",
                "Yes, she said it is only a sprain and to rest two weeks",
                age_days=2.9,
                channel_type="public",
                **thread,
            ),
            _episode(
                "hidden",
                "Yes, and the bill was four hundred dollars",
                age_days=2.8,
                channel_type="private",
                **thread,
            ),
            _episode(
                "noise",
                "The printer on floor two is jammed again",
                age_days=1.0,
                channel_type="public",
                team="T1",
                channel="C2",
            ),
        ]
    )
    outsider = Viewer("T1", "C9", "public", "U9")
    hits = memory.recall("what did the vet say about Biscuit?", outsider, k=3, now=NOW)
    assert [hit.episode.id for hit in hits[:2]] == ["question", "answer"]
    assert "hidden" not in {hit.episode.id for hit in hits}
    insider = Viewer("T1", "C1", "private", "U9")
    assert "hidden" in {
        hit.episode.id for hit in memory.recall("the vet bill for Biscuit", insider, k=4, now=NOW)
    }


def test_writes_from_another_process_reach_a_running_index(
    db: Database, memory: EpisodicMemory, minilm: MiniLMEmbedder, open_database: OpenDatabase
) -> None:
    memory.remember([_episode("mine", "the office plants need water on Mondays")])
    assert [h.episode.id for h in memory.recall("office plants", Viewer(), k=5, now=NOW)] == [
        "mine"
    ]
    # A second connection stands in for `thoth episodes import` run beside the bridge.
    other = EpisodicMemory(open_database(LAYER_SCHEMAS), minilm)
    other.remember([_episode("theirs", "the office plants were moved to the window")])
    found = {h.episode.id for h in memory.recall("office plants", Viewer(), k=5, now=NOW)}
    assert found == {"mine", "theirs"}
    assert other.forget("mine")
    assert [h.episode.id for h in memory.recall("plants", Viewer(), k=5, now=NOW)] == ["theirs"]
    index = memory._loaded_index()
    assert memory.store.rowid_of("theirs") in index and index.episode_count == 1


def test_blas_runs_on_one_thread_and_bulk_is_spread_over_the_cores() -> None:
    from threadpoolctl import threadpool_info

    embedder = MiniLMEmbedder(batch_size=4)
    texts = [f"turn {n} about the deploy" + " and more" * n for n in range(11)]
    bulk = embedder.embed(texts)
    # numpy's own BLAS (the reference test may have loaded torch's and scipy's too).
    numpy_blas = [pool for pool in threadpool_info() if "numpy" in pool["filepath"]]
    assert numpy_blas and {pool["num_threads"] for pool in numpy_blas} == {1}
    # Sorted into batches of other texts and run on other threads, each text still
    # gets the vector it gets alone.
    alone = np.vstack([embedder.embed([text]) for text in texts])
    assert np.abs(bulk - alone).max() < 1e-5
    assert np.allclose(np.linalg.norm(bulk, axis=1), 1.0, atol=1e-5)


def test_on_postgresql_a_viewer_who_may_see_few_of_the_nearest_still_gets_them(
    postgres: PostgresForTests, hashing_embedder: HashingEmbedder
) -> None:
    db = connect_postgres(postgres.fresh_database(), schemas=LAYER_SCHEMAS)
    memory = EpisodicMemory(db, hashing_embedder)
    # Another workspace's 400 episodes sit nearer the question than this one's three:
    # HNSW's first 200 candidates hold none this viewer may see.
    memory.remember([_episode(f"theirs-{n}", f"the rollback runbook for payments {n}",
                              team="T2", channel="C9") for n in range(400)])
    memory.remember([_episode(f"ours-{n}", f"rollback notes, part {n}", team="T1",
                              channel="C1") for n in range(3)])
    # HNSW's walk, as a store past the exact scan's size has it.
    search = PostgresEpisodeSearch(db, exact_up_to=0)
    vector = hashing_embedder.embed(["the rollback runbook for payments"])[0]
    found = search.semantic_search(vector, Viewer(team="T1", channel="C1"), 10)
    ours = {memory.store.rowid_of(f"ours-{n}") for n in range(3)}
    assert {rowid for rowid, _ in found} == ours
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    # The other workspace's viewer gets its own nearest first, by cosine similarity.
    theirs = search.semantic_search(vector, Viewer(team="T2", channel="C9"), 5)
    assert len(theirs) == 5 and theirs[0][1] > max(scores)
    db.close()


def test_on_postgresql_the_searched_vector_is_exactly_the_stored_float16(
    postgres: PostgresForTests,
) -> None:
    db = connect_postgres(postgres.fresh_database(), schemas=LAYER_SCHEMAS)
    # Normal, negative, subnormal (below 2^-14), zero, negative zero and the extremes.
    values = [0.5, -0.25, 1e-6, -3e-7, 0.0, -0.0, 65504.0, 6.1035e-05, 0.0999]
    half = np.resize(np.array(values, dtype=np.float16), 384)
    with db.read() as conn:
        (text,) = conn.execute("SELECT thoth_half_to_vector(?)::text", (half.tobytes(),)).fetchone()
    decoded = np.array(text.strip("[]").split(","), dtype=np.float32)
    assert np.array_equal(decoded, half.astype(np.float32))
    db.close()


def test_thread_neighbours_walk_the_thread_in_order_and_stay_in_it(
    memory: EpisodicMemory,
) -> None:
    # Three turns said in the same second outside any thread (a DM), ordered by rowid;
    # a threaded turn and one of another channel at that second are no neighbours.
    same_second = {"team": "T1", "channel": "D1", "channel_type": "im", "user": "U1"}
    memory.remember([_episode(f"dm-{n}", f"turn {n}", age_days=1, **same_second)
                     for n in range(3)])
    memory.remember([
        _episode("asked", "in a thread", age_days=1, thread_ts="100.1", **same_second),
        _episode("answered", "its answer", age_days=0.5, thread_ts="100.1", **same_second),
        _episode("other-thread", "another thread", age_days=0.7, thread_ts="200.2",
                 **same_second),
        _episode("elsewhere", "another channel", age_days=1, team="T1", channel="C2",
                 channel_type="public"),
    ])
    rowid = {name: memory.store.rowid_of(name) for name in
             ("dm-0", "dm-1", "dm-2", "asked", "answered", "other-thread", "elsewhere")}
    owner = Viewer("T1", "D1", "im", "U1")
    found = memory.store.thread_neighbours([rowid[name] for name in rowid], owner)
    assert found == {
        rowid["dm-0"]: [(rowid["dm-1"], 1)],
        rowid["dm-1"]: [(rowid["dm-0"], 1), (rowid["dm-2"], 1)],
        rowid["dm-2"]: [(rowid["dm-1"], 1)],
        rowid["asked"]: [(rowid["answered"], 1)],
        rowid["answered"]: [(rowid["asked"], 1)],
        rowid["other-thread"]: [],
        rowid["elsewhere"]: [],
    }
    # Two turns away: dm-0 and dm-2 reach each other past dm-1; nothing else is that far.
    reached = memory.store.thread_neighbours([rowid["dm-0"], rowid["dm-2"], rowid["asked"]],
                                             owner, reach=2)
    assert reached == {
        rowid["dm-0"]: [(rowid["dm-1"], 1), (rowid["dm-2"], 2)],
        rowid["dm-2"]: [(rowid["dm-1"], 1), (rowid["dm-0"], 2)],
        rowid["asked"]: [(rowid["answered"], 1)],
    }
    # Another person's view of that DM has no neighbours in it.
    stranger = Viewer("T1", "D1", "im", "U2")
    assert memory.store.thread_neighbours([rowid["dm-1"]], stranger, reach=2) == {
        rowid["dm-1"]: []}


def _counted_and_matching(
    db: Database, words: Sequence[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """Each word's count as recall reads it, and as a scan of the episodes finds it."""
    with db.read() as conn:
        matching = {
            word: int(conn.execute(
                # The word stemmed as the index stems it (episodic migration 11).
                "SELECT count(*) FROM episodes WHERE search @@ plainto_tsquery('simple',"
                " array_to_string(tsvector_to_array(thoth_words(?)), ' '))",
                (word,),
            ).fetchone()[0])
            for word in words
        }
    return PostgresEpisodeSearch(db).document_counts(words), matching


def test_on_postgresql_word_counts_follow_every_write(
    postgres: PostgresForTests, hashing_embedder: HashingEmbedder
) -> None:
    db = connect_postgres(postgres.fresh_database(), schemas=LAYER_SCHEMAS)
    memory = EpisodicMemory(db, hashing_embedder)
    words = ["rollback", "rolled", "payments", "canary", "x1", "unheard"]
    # Each in a thread of its own: none borrows the words of the turn before it.
    memory.remember([_episode(f"r{n}", f"rollback of payments {n}", thread_ts=f"{n}.0")
                     for n in range(5)])
    memory.remember([_episode("c", "the canary rolled back, then x1-beta shipped",
                              thread_ts="c.0")])
    counted, matching = _counted_and_matching(db, words)
    # "rolled" and "rollback" stem apart; "x1" is one of the lexemes "x1-beta" makes.
    assert counted == matching == {"rollback": 5, "rolled": 1, "payments": 5, "canary": 1,
                                   "x1": 1, "unheard": 0}
    assert memory.forget("r0") and memory.forget_many(["r1", "c"]) == 2
    memory.set_feedback("r2", Feedback.WORKED)
    with db.write() as conn:
        conn.execute("UPDATE episodes SET user_text = 'a canary release' WHERE id = 'r3'")
    counted, matching = _counted_and_matching(db, words)
    assert counted == matching == {"rollback": 2, "rolled": 0, "payments": 2, "canary": 1,
                                   "x1": 0, "unheard": 0}
    with db.write() as conn:
        conn.execute("TRUNCATE episodes CASCADE")
    assert _counted_and_matching(db, words)[0] == dict.fromkeys(words, 0)
    db.close()


def test_on_postgresql_word_counts_start_from_the_episodes_already_stored(
    postgres: PostgresForTests, hashing_embedder: HashingEmbedder
) -> None:
    url = postgres.fresh_database()
    before = [
        schema if schema.owner != "episodic" else Schema(schema.owner, schema.migrations[:3])
        for schema in LAYER_SCHEMAS
    ]
    old = connect_postgres(url, schemas=before)
    with old.write() as conn:  # as that schema's store wrote them
        conn.executemany(
            "INSERT INTO episodes (id, user_text, summary, created_at, team, channel,"
            " channel_type, embedding_model) VALUES (?, ?, '', ?, 'T1', 'C1', 'public', 'm')",
            [(f"e{n}", f"deploy notes {n % 2}", NOW + n) for n in range(4)],
        )
    old.close()
    db = connect_postgres(url, schemas=LAYER_SCHEMAS)
    counted, matching = _counted_and_matching(db, ["deploy", "notes", "1"])
    assert counted == matching == {"deploy": 4, "notes": 4, "1": 2}
    db.close()


def test_an_export_holds_what_its_viewer_may_see_and_no_more(memory: EpisodicMemory) -> None:
    memory.remember([
        _episode("pub", "public words", team="T1", channel="C1", channel_type="public"),
        _episode("priv", "private words", team="T1", channel="G1", channel_type="private"),
        _episode("dm", "dana's dm", team="T1", channel="D1", channel_type="im", user="U1"),
        _episode("other", "another team", team="T2", channel="C9", channel_type="public"),
    ])
    store = memory.store
    dana = Viewer("T1", "console", "im", "U1")
    assert [e.id for e in store.iter_episodes(viewer=dana)] == ["pub", "dm"]
    assert [e.id for e in store.iter_episodes(batch_size=1, viewer=dana)] == ["pub", "dm"]
    assert len(list(store.iter_episodes())) == 4


def test_every_candidate_is_scored_by_both_searches_on_each_engine(
    db: Database, hashing_embedder: HashingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one candidate a search, the two searches find different turns; completed, each
    is scored by the other too, with exactly the score that search gives it alone."""
    import layers.episodic.memory as memory_module
    from layers.episodic.recall_levers import RecallLevers

    viewer = Viewer("T1", "C1")
    EpisodicMemory(db, hashing_embedder).remember([
        # Found by its one word, said three times in few: first by words only.
        _episode("words", "zebra zebra zebra", team="T1", channel="C1"),
        # The question's very tokens, most of them words full-text search drops, in a
        # longer turn: first by meaning (the test embedder hashes every token), behind
        # by words.
        _episode("meaning", "zebra and the of it is to was lorem ipsum dolor sit amet",
                 team="T1", channel="C1"),
        # Nearer still by both, in a private channel this viewer is not in.
        _episode("hidden", "zebra zebra and the of it is to was", team="T1", channel="C9",
                 channel_type="private"),
    ])
    monkeypatch.setattr(memory_module, "CANDIDATES_PER_SEARCH", 1)
    query = memory_module.RecallQuery("zebra and the of it is to was", viewer,
                                      now=1_700_000_000.0)
    vector = hashing_embedder.embed([query.text])[0]

    def searched(levers: str) -> tuple[dict[str, float], dict[str, float]]:
        memory = EpisodicMemory(db, hashing_embedder, levers=RecallLevers.named(levers))
        lexical, semantic, facets = memory._searched(query, vector, facets_wanted=True)
        ids = {memory.store.rowid_of(name): name for name in ("words", "meaning", "hidden")}
        # Who said each candidate and when, read with the scores: every candidate's.
        assert {ids[rowid] for rowid in facets} == {ids[rowid] for rowid, _ in
                                                    [*lexical, *semantic]}
        return ({ids[rowid]: score for rowid, score in lexical},
                {ids[rowid]: score for rowid, score in semantic})

    alone_words, alone_meaning = searched("none")
    assert set(alone_words) == {"words"} and set(alone_meaning) == {"meaning"}
    words, meaning = searched("cosines_for_word_matches,word_scores_for_close_matches")
    assert set(words) == set(meaning) == {"words", "meaning"}  # never the hidden one
    assert words["words"] == alone_words["words"]
    assert meaning["meaning"] == alone_meaning["meaning"]
    cosine = float(hashing_embedder.embed(["zebra zebra zebra"])[0] @ vector)
    assert meaning["words"] == pytest.approx(cosine, abs=2e-3)  # stored as float16
    assert 0 < words["meaning"] < words["words"]


def test_a_turn_said_by_the_person_a_question_names_is_preferred(
    db: Database, hashing_embedder: HashingEmbedder
) -> None:
    """The lever raises the named speaker's turn by its boost (their names are among the
    indexed words too, so Dana's leads without it, by less)."""
    from layers.episodic.ranking import NAMED_SPEAKER_BOOST
    from layers.episodic.recall_levers import RecallLevers

    viewer = Viewer("T1", "C1")
    EpisodicMemory(db, hashing_embedder).remember([
        Episode("by-ari", "the staging deploy moved to Thursday", "", 1_700_000_000.0,
                team="T1", channel="C1", user="U2", user_name="Ari", thread_ts="1.1"),
        Episode("by-dana", "the staging deploy moved to Thursday", "", 1_700_000_000.0,
                team="T1", channel="C1", user="U1", user_name="Dana", thread_ts="2.2"),
    ])
    question = "What did Dana say about the staging deploy?"

    def best(levers: RecallLevers) -> float:
        hits = EpisodicMemory(db, hashing_embedder, levers=levers).recall(question, viewer, k=2)
        assert [hit.episode.id for hit in hits] == ["by-dana", "by-ari"]
        return hits[0].score

    named, plain = best(RecallLevers()), best(RecallLevers(named_speakers=False))
    assert named == pytest.approx(plain * (1 + NAMED_SPEAKER_BOOST))


def test_a_turn_said_on_the_day_a_question_names_is_preferred_in_the_askers_zone(
    db: Database, hashing_embedder: HashingEmbedder
) -> None:
    """Two turns alike in words; the one said on the named day, where the asker is,
    leads. 23:30 UTC on 12 October is 13 October in Tokyo."""
    from layers.episodic.named_dates import zone_named

    viewer = Viewer("T1", "C1")
    late_on_the_12th = datetime(2023, 10, 12, 23, 30, tzinfo=UTC).timestamp()
    noon_on_the_14th = datetime(2023, 10, 14, 12, tzinfo=UTC).timestamp()
    memory = EpisodicMemory(db, hashing_embedder)
    memory.remember([
        Episode("the-12th-utc", "we showed the harbour painting", "", late_on_the_12th,
                team="T1", channel="C1", thread_ts="1.1"),
        Episode("the-14th", "we showed the harbour painting", "", noon_on_the_14th,
                team="T1", channel="C1", thread_ts="2.2"),
    ])
    question = "Which painting did we show on 13 October 2023?"
    now = datetime(2023, 12, 1, tzinfo=UTC).timestamp()
    in_tokyo = memory.recall(question, viewer, k=2, now=now, zone=zone_named("Asia/Tokyo"))
    assert [hit.episode.id for hit in in_tokyo][0] == "the-12th-utc"
    assert in_tokyo[0].score > 1.2 * in_tokyo[1].score
    in_london = memory.recall(question, viewer, k=2, now=now, zone=zone_named("Europe/London"))
    # 00:30 on the 13th in London (BST) too; in New York it is still the 12th: no lead.
    assert [hit.episode.id for hit in in_london][0] == "the-12th-utc"
    in_new_york = memory.recall(question, viewer, k=2, now=now,
                                zone=zone_named("America/New_York"))
    assert in_new_york[0].score == pytest.approx(in_new_york[1].score, rel=0.1)


def test_a_turn_is_found_by_the_words_of_the_turn_before_it_and_forgets_them(
    db: Database, hashing_embedder: HashingEmbedder
) -> None:
    """An answer that never says what it answers is found by its question's words, in its
    own thread only, within the hour; forgetting or editing the question moves its words
    out of the answer too, and the lever off finds the answer no more."""
    from layers.episodic.recall_levers import RecallLevers

    viewer = Viewer("T1", "C1")
    at = 1_700_000_000.0

    def said(id_: str, text: str, seconds: float, thread: str) -> Episode:
        return Episode(id_, text, "", at + seconds, team="T1", channel="C1", thread_ts=thread)

    memory = EpisodicMemory(db, hashing_embedder)
    memory.remember([
        said("question", "which port does the flamingo proxy listen on", 0, "1.1"),
        said("answer", "it is 8443 since last week", 30, "1.1"),
        said("too-late", "no idea, ask again tomorrow", 2 * 3600, "1.1"),
        said("elsewhere", "it moved to the new rack", 60, "2.2"),
    ])

    def found(words: str, levers: RecallLevers | None = None) -> set[str]:
        """What the search by words finds (thread context aside, which lends any turn
        of a thread some of its neighbour's score)."""
        memory = EpisodicMemory(db, hashing_embedder, levers=levers)
        query = RecallQuery(words, viewer, now=at + 3 * 3600)
        lexical, _, _ = memory._searched(query, hashing_embedder.embed([words])[0],
                                         facets_wanted=False)
        with db.read() as conn:
            return {str(conn.execute("SELECT id FROM episodes WHERE rowid = ?",
                                     (rowid,)).fetchone()[0]) for rowid, _ in lexical}

    assert found("flamingo proxy") == {"question", "answer"}
    assert found("flamingo proxy", RecallLevers(words_of_the_turn_before=False)) == {"question"}
    with db.write() as conn:
        conn.execute("UPDATE episodes SET user_text = 'which port does the pelican gateway"
                     " listen on' WHERE id = 'question'")
    assert found("flamingo") == set() and found("pelican gateway") == {"question", "answer"}
    assert memory.forget("question")
    assert found("pelican gateway") == set()
    with db.read() as conn:
        row = conn.execute("SELECT turn_before, turn_before_rowid FROM episodes"
                           " WHERE id = 'answer'").fetchone()
    assert tuple(row) == ("", None)


def test_a_large_store_is_searched_through_a_graph_saved_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past APPROXIMATE_FROM vectors the first recall builds the graph in the background
    and saves it beside thoth.db; the next process restores it instead of building; an
    episode stored after it was built is found, a forgotten one never, and forgetting
    deletes the saved graph (it holds the forgotten vector)."""
    import layers.episodic.approximate_index as approximate_index
    import layers.episodic.vector_index as vector_index
    from layers.shared.storage.engines import open_sqlite

    monkeypatch.setattr(vector_index, "APPROXIMATE_FROM", 1000)
    # Recall's 100 candidates from 1,200 vectors: the graph is asked for 200 of them.
    monkeypatch.setattr(vector_index, "FIRST_ASK_PER_EPISODE", 2)
    embedder, path, graph = TopicEmbedder(), tmp_path / "thoth.db", tmp_path / "thoth.db.hnsw"
    memory = EpisodicMemory(open_sqlite(path, schemas=LAYER_SCHEMAS), embedder,
                            graph_path=graph)
    memory.remember([_episode(f"e{n}", f"topic{n % 40} note number {n}", team="T1",
                              channel="C1") for n in range(1200)])
    viewer = Viewer("T1", "C1")
    memory.recall("topic7 note", viewer, k=3)
    assert memory.vector_graph_ready(60) and (graph / "graph.usearch").exists()
    assert oct((graph / "keys.npy").stat().st_mode & 0o777) == "0o600"
    index = memory._loaded_index()
    assert index.graph is not None and len(index.graph) == 1200

    def never_built(*_: object) -> None:
        raise AssertionError("built, not restored")

    with monkeypatch.context() as patched:
        patched.setattr(approximate_index.ApproximateIndex, "built", never_built)
        again = EpisodicMemory(open_sqlite(path, schemas=LAYER_SCHEMAS), embedder,
                               graph_path=graph)
        assert [hit.episode.id for hit in again.recall("topic7 note number 7", viewer,
                                                       k=1)] == ["e7"]
        assert again._loaded_index().graph is not None and again.vector_graph_ready(5)

    memory.remember([_episode("late", "topic7 a late note", team="T1", channel="C1")])
    late = embedder.embed(["topic7 a late note"])[0]
    assert index.search(late, viewer, 1)[0][0] == memory.store.rowid_of("late")
    gone = embedder.embed(["topic7 note number 47"])[0]
    rowid = memory.store.rowid_of("e47")
    assert index.search(gone, viewer, 1)[0][0] == rowid
    assert memory.forget("e47")
    assert rowid not in {found for found, _ in index.search(gone, viewer, 50)}
    assert not graph.exists()


def test_a_turn_borrows_only_words_seen_by_everyone_who_sees_it(
    db: Database, hashing_embedder: HashingEmbedder
) -> None:
    """One channel id for two people's DMs (an import without channels gives them one),
    and for a channel made public: no turn borrows words fewer people may see."""
    at = 1_700_000_000.0
    EpisodicMemory(db, hashing_embedder).remember([
        Episode("anas-dm", "my salary is flamingo", "", at, team="T1", channel="X",
                channel_type="im", user="U1"),
        Episode("bens-dm", "what about it", "", at + 10, team="T1", channel="X",
                channel_type="im", user="U2"),
        Episode("now-public", "and then", "", at + 20, team="T1", channel="X",
                channel_type="public", user="U3"),
        Episode("anas-next", "is that right", "", at + 30, team="T1", channel="X",
                channel_type="im", user="U1"),
    ])
    with db.read() as conn:
        borrowed = dict(conn.execute("SELECT id, turn_before FROM episodes").fetchall())
    assert borrowed == {"anas-dm": "", "bens-dm": "", "now-public": "",
                        "anas-next": "my salary is flamingo"}


def test_a_name_the_place_calls_someone_by_finds_their_turns_and_is_forgotten_with_them(
    db: Database, hashing_embedder: HashingEmbedder
) -> None:
    """"Kate" is how Ari calls Emi (Emi's account shows "Emi"): a question about Kate
    prefers Emi's turns, as it would had it said "Emi". Forgetting the turns that named
    her, or hers they named her in reply to, forgets the name."""
    from layers.episodic.ranking import NAMED_SPEAKER_BOOST
    from layers.episodic.recall_levers import RecallLevers

    viewer = Viewer("T1", "C1")
    said = [("1.1", "U1", "Emi", "Hi!"),
            ("1.1", "U2", "Ari", "Hey Kate! How was your week?"),
            ("1.1", "U1", "Emi", "Busy, but good."),
            ("1.1", "U2", "Ari", "Thank you Kate!"),
            ("1.1", "U1", "Emi", "Any time."),
            ("1.1", "U2", "Ari", "Good night Kate!"),
            ("2.2", "U1", "Emi", "We made fresh pasta with peas"),
            ("3.3", "U3", "Bo", "We made fresh pasta with peas")]
    episodes = [Episode(f"t{index}", text, "", 1_700_000_000.0 + 60 * index, team="T1",
                        channel="C1", user=user, user_name=name, thread_ts=thread)
                for index, (thread, user, name, text) in enumerate(said)]
    # The same name said in another channel names nobody here.
    episodes.append(Episode("elsewhere", "Hey Kate!", "", 1_700_000_000.0, team="T1",
                            channel="C2", user="U2", user_name="Ari", thread_ts="9.9"))
    EpisodicMemory(db, hashing_embedder).remember(episodes)
    question = "What pasta did Kate make?"
    levers = RecallLevers()

    def recalled(levers: RecallLevers) -> dict[str, float]:
        memory = EpisodicMemory(db, hashing_embedder, levers=levers)
        return {hit.episode.id: hit.score for hit in memory.recall(question, viewer, k=8)}

    by_name, plain = recalled(levers), recalled(RecallLevers(names_people_go_by=False))
    assert next(iter(by_name)) == "t6"
    # Raised as a named speaker's turn, and closer in meaning: asked as "Emi" (her turns
    # are embedded with her account's name).
    assert by_name["t6"] > by_name["t7"] * (1 + NAMED_SPEAKER_BOOST)
    assert plain["t6"] == pytest.approx(plain["t7"])  # without it, Kate is no one here
    memory = EpisodicMemory(db, hashing_embedder, levers=levers)
    assert memory.store.people_called("T1", "C1", ["kate"]) == {"kate": {"Emi": 3}}
    # A paused turn counts for nothing, saying the name or named by it.
    memory.states.set("t2", "paused", by="U9")
    assert memory.store.people_called("T1", "C1", ["kate"]) == {"kate": {"Emi": 2}}
    memory.states.set("t2", "live", by="U9")
    # Gone with the turn that said it, and with the turn of the person it named.
    memory.forget_many(["t0"])  # Emi's, that "Hey Kate!" answered
    assert memory.store.people_called("T1", "C1", ["kate"]) == {"kate": {"Emi": 2}}
    memory.forget_many(["t3", "t5"])  # Ari's
    assert memory.store.people_called("T1", "C1", ["kate"]) == {}


def test_a_word_longer_than_a_tsvector_takes_is_stored_and_the_rest_found(
    db: Database, hashing_embedder: HashingEmbedder
) -> None:
    """A pasted hash of 2,400 bytes is one word: PostgreSQL's tsvector refuses words over
    2,046 bytes, so it is left out of the word index there (SQLite indexes it); the
    turn's other words are found on both engines."""
    memory = EpisodicMemory(db, hashing_embedder)
    memory.remember([Episode("hash", "the release digest is " + "deadbeef" * 300, "",
                             1_700_000_000.0, team="T1", channel="C1")])
    hits = memory.recall("release digest", Viewer("T1", "C1"), k=1)
    assert [hit.episode.id for hit in hits] == ["hash"]
