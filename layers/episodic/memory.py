"""The episodic layer's one entry point: remember, recall, forget, purge.

Everything persisted passes ``redact()`` first. Recall searches every episode
the viewer may see, lexically and by meaning (MiniLM cosine), and fuses the two
(see ``ranking.py``). The two searches are the engine's: on SQLite, FTS5 BM25 and
the in-memory vector index (``vector_index.py``); on PostgreSQL, both inside the
database, full-text and pgvector's HNSW (``pg_search.py``). Fusion and ranking are
one code.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, tzinfo
from pathlib import Path

import numpy as np
import numpy.typing as npt

from layers.episodic.approximate_index import (
    ApproximateIndex,
    KeyVectors,
    forget_saved,
    saved_with_vectors,
)
from layers.episodic.backfill import Backfill
from layers.episodic.called_names import called_most
from layers.episodic.chunking import episode_units, file_units
from layers.episodic.episode import (
    MAX_TEXT_CHARS,
    Episode,
    EpisodeFile,
    Feedback,
    Hit,
    RecalledFile,
)
from layers.episodic.file_passages import passage_for
from layers.episodic.lexical import affordable_terms, content_words, match_expression
from layers.episodic.named_dates import windows_named
from layers.episodic.named_people import first_name, named_in
from layers.episodic.pg_search import PostgresEpisodeSearch
from layers.episodic.ranking import (
    Priors,
    apply_priors,
    fuse,
    with_named_dates,
    with_named_speakers,
    with_thread_context,
)
from layers.episodic.recall_levers import RecallLevers
from layers.episodic.recall_uses import RecallUses
from layers.episodic.round_trips import Both, at_once, one_then_other
from layers.episodic.states import EpisodeStates
from layers.episodic.store import EpisodeStore, StoredChunks
from layers.episodic.vector_index import ChunkOwner, VectorIndex, VectorsOf
from layers.shared.embedding.embedder import Embedder
from layers.shared.errors import BadInput
from layers.shared.places import Viewer
from layers.shared.redaction import redact
from layers.shared.storage.database import Database

log = logging.getLogger(__name__)

# How deep each ranking goes before fusion: deep enough that an episode ranked
# modestly by both searches still surfaces, shallow enough to stay fast.
CANDIDATES_PER_SEARCH = 100
# A long question keeps its first words for the lexical half (the model reads
# only the first 256 word pieces anyway); each word costs one count lookup.
MAX_QUERY_TERMS = 32
# Only strong hits lend context to their thread neighbours; weak ones barely move them.
CONTEXT_SOURCES = 30
# MiniLM's cosine between unrelated sentences rarely reaches this (about 0.0 to 0.2);
# a paraphrase sits well above it. Below it, and with no word in common, an episode is
# not recalled at all.
MIN_SIMILARITY = 0.25
# Priors move scores by a few percent, so only a few places past k can reach the top k.
RERANK_SLACK = 10
# A loaded index gets room for this fraction (1/n) more vectors than are stored, so
# the next few writes do not double it at once.
INDEX_HEADROOM_DIVISOR = 16
# Forgotten or replaced vectors' slots kept before the index is loaded anew (besides a
# quarter of the live ones): a small store never reloads for a few.
DEAD_SLOTS_KEPT = 10_000


@dataclass(frozen=True)
class RecallQuery:
    """One question, asked by ``viewer`` at time ``now`` (seconds since the epoch)."""

    text: str
    viewer: Viewer
    now: float | None = None
    # Where the asker is: a date the question names is a day there (Slack's ``tz``).
    zone: tzinfo = UTC


class EpisodicMemory:
    """Remembers turns and recalls the ones a viewer may see."""

    def __init__(
        self, db: Database, embedder: Embedder, priors: Priors | None = None, *,
        min_similarity: float = MIN_SIMILARITY, levers: RecallLevers | None = None,
        graph_path: Path | None = None,
    ) -> None:
        self._min_similarity = min_similarity
        self._levers = levers or RecallLevers()
        self._store = EpisodeStore(db, embedder.model_id)
        # What episodes stored before episodic migration 6 still lack (backfill.py).
        self.backfill = Backfill(db, embedder, sentence_units=self._levers.sentence_units,
                                 reembedded=self._drop_index)
        # Which turns recalled which episode (the console's provenance).
        self.uses = RecallUses(db)
        # Which memories are paused or archived: recall passes them by.
        self.states = EpisodeStates(db)
        self._embedder = embedder
        self._priors = priors or Priors()
        self._index: VectorIndex | None = None
        self._vectors_loaded = 0
        self._data_version = -1
        self._index_lock = threading.Lock()
        # The HNSW graph over the vectors (approximate_index.py), saved at this path.
        self._graph_path = graph_path
        # Set while no graph is being built.
        self._graph_idle = threading.Event()
        self._graph_idle.set()
        # On PostgreSQL both searches run in the database (no index in this process).
        self._in_database = PostgresEpisodeSearch(db) if db.dialect == "postgresql" else None

    @property
    def store(self) -> EpisodeStore:
        return self._store

    def remember(self, episodes: Sequence[Episode]) -> list[str]:
        """Redact, embed and store episodes in one transaction; returns their ids.

        Raises ``BadInput`` (storing nothing) if any is too long or its id exists.
        """
        clean = [redacted(_checked(episode)) for episode in episodes]
        ids = [episode.id for episode in clean]
        if len(set(ids)) != len(ids):
            raise BadInput("the same episode id appears twice")
        taken = self._store.existing_ids(ids)
        if taken:
            raise BadInput(f"episode id {sorted(taken)[0]!r} already exists")
        chunks_per_episode = [
            episode_units(e.user_text, e.summary, e.user_name,
                          by_sentence=self._levers.sentence_units)
            + file_units([(file.name, file.extract) for file in e.files])
            for e in clean
        ]
        flat = [chunk for chunks in chunks_per_episode for chunk in chunks]
        vectors = self._embedder.embed(flat)
        items: list[StoredChunks] = []
        start = 0
        for episode, chunks in zip(clean, chunks_per_episode, strict=True):
            items.append(StoredChunks(episode, vectors[start : start + len(chunks)]))
            start += len(chunks)
        rowids = self._store.insert(items)
        with self._index_lock:
            if self._index is not None:
                owners = [
                    _owner(rowid, item.episode)
                    for rowid, item in zip(rowids, items, strict=True)
                    for _ in range(len(item.vectors))
                ]
                rows = np.array(self._store.vector_rows_of(rowids), dtype=np.int64)
                self._index.add(owners, vectors, rows)
        return ids

    def recall(self, query: str, viewer: Viewer, *, k: int, now: float | None = None,
               zone: tzinfo = UTC) -> list[Hit]:
        """The ``k`` most relevant episodes ``viewer`` may see, best first (``zone``: the
        asker's, where the dates they name are days)."""
        return self.recall_many([RecallQuery(query, viewer, now, zone)], k=k)[0]

    def recall_many(self, queries: Sequence[RecallQuery], *, k: int) -> list[list[Hit]]:
        """Recall for several queries, embedding them in one batch."""
        for query in queries:
            if not query.text.strip():
                raise BadInput("the query is empty")
            if len(query.text) > MAX_TEXT_CHARS:
                raise BadInput(
                    f"the query is {len(query.text)} characters; the limit is {MAX_TEXT_CHARS}"
                )
        named = [self._named_in(query) for query in queries]
        vectors = self._embedder.embed([redact(_as_embedded(query.text, names))
                                        for query, names in zip(queries, named, strict=True)])
        return [self.search(query, vector, k=k, named=names)
                for query, vector, names in zip(queries, vectors, named, strict=True)]

    def search(self, query: RecallQuery, vector: npt.NDArray[np.float32], *, k: int,
               named: _Named | None = None) -> list[Hit]:
        """Recall with the query already embedded (what the latency benchmark times), and
        what it names already read (else read here)."""
        now = time.time() if query.now is None else query.now
        named = self._named_in(query) if named is None else named
        lexical, semantic, facets = self._searched(query, vector, facets_wanted=bool(named))
        # Min-max scaling makes the best candidate look relevant however poor it is: an
        # episode is a candidate only when it shares a word with the query or comes
        # close enough in meaning (the floor), so nothing unrelated fills the k places.
        relevant = {rowid for rowid, _ in lexical} | {
            rowid for rowid, similarity in semantic if similarity >= self._min_similarity}
        # A paused or archived memory is passed by (states.py), before the best are picked.
        held_back = self.states.held_back()
        relevant -= held_back
        lexical = [(rowid, score) for rowid, score in lexical if rowid in relevant]
        semantic = [(rowid, score) for rowid, score in semantic if rowid in relevant]
        fused = fuse(lexical, semantic, from_zero=self._levers.scaled_from_zero)
        fused = _with_what_the_question_names(fused, named, facets)
        strongest = sorted(fused, key=fused.__getitem__, reverse=True)[: max(k, CONTEXT_SOURCES)]
        reach = 2 if self._levers.context_two_turns_away else 1
        scores = with_thread_context(
            fused, self._store.thread_neighbours(strongest, query.viewer, reach)
        )
        for rowid in held_back & scores.keys():  # nor brought in as a hit's context
            del scores[rowid]
        ranked = sorted(scores, key=scores.__getitem__, reverse=True)[: k + RERANK_SLACK]
        episodes = self._store.by_rowids(ranked)
        scored = sorted(
            ((apply_priors(scores[rowid], age_seconds=now - episode.created_at,
                           feedback=int(episode.feedback), priors=self._priors), rowid)
             for rowid, episode in episodes.items()), reverse=True)[:k]
        files = self._store.files_of([rowid for _, rowid in scored])
        return [Hit(episodes[rowid], score, _recalled_files(files.get(rowid, ()), query.text))
                for score, rowid in scored]

    def _named_in(self, query: RecallQuery) -> _Named:
        """Who and when the question names, as far as the levers look."""
        now = time.time() if query.now is None else query.now
        windows = (tuple(windows_named(query.text, now, query.zone))
                   if self._levers.named_dates else ())
        names = named_in(query.text)
        called: dict[str, str] = {}  # a name the question gives -> who it means here
        if names and self._levers.names_people_go_by:
            viewer = query.viewer
            for name, counts in self._store.people_called(
                    viewer.team, viewer.channel, names).items():
                person = called_most(counts)
                if person is not None:
                    called[name] = person
        speakers: frozenset[str] = frozenset()
        if self._levers.named_speakers:
            speakers = names | {name for name in map(first_name, called.values()) if name}
        return _Named(speakers, windows, called)

    def _searched(
        self, query: RecallQuery, vector: npt.NDArray[np.float32], *, facets_wanted: bool
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], Facets]:
        """(lexical, semantic) candidates, (rowid, score) best first, from either engine,
        and who said each candidate and when (``facets_wanted``, else none)."""
        words = content_words(query.text)[:MAX_QUERY_TERMS]
        viewer, wanted = query.viewer, CANDIDATES_PER_SEARCH
        if self._in_database is not None:
            search = self._in_database
            turn_before = self._levers.words_of_the_turn_before
            chosen: dict[str, int] = {}  # the words searched, with their counts

            def by_words() -> list[tuple[int, float]]:
                counts = search.document_counts(words)
                chosen.update({word: counts[word] for word in affordable_terms(counts)})
                return search.lexical_search(chosen, viewer, wanted, turn_before)

            lexical, semantic = at_once(
                by_words, lambda: search.semantic_search(vector, viewer, wanted))
            return self._completed(lexical, semantic,
                                   lambda rowids: search.lexical_scores(
                                       chosen, rowids, turn_before),
                                   lambda rowids: search.similarities(vector, rowids),
                                   both=at_once, facets_wanted=facets_wanted)
        index = self._loaded_index()
        semantic = index.search(vector, viewer, wanted)
        match = match_expression(affordable_terms(self._store.document_counts(words)),
                                 with_turn_before=self._levers.words_of_the_turn_before)
        matches = self._store.lexical_matches(match) if match else []
        word_scores = dict(matches)
        return self._completed(
            self._store.visible_best(matches, viewer, wanted), semantic,
            lambda rowids: {rowid: word_scores[rowid] for rowid in rowids
                            if rowid in word_scores},
            lambda rowids: index.similarities(vector, rowids),
            both=one_then_other, facets_wanted=facets_wanted)

    def _completed(
        self, lexical: list[tuple[int, float]], semantic: list[tuple[int, float]],
        lexical_of: Callable[[list[int]], dict[int, float]],
        cosine_of: Callable[[list[int]], dict[int, float]],
        both: Both, facets_wanted: bool,
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], Facets]:
        """Both lists over the candidates of either, as the levers say: each search's
        own score for what only the other found (no word score where an episode holds
        none of the words); and the candidates' facets. ``both`` runs two lookups (on
        PostgreSQL, at once: the facets beside the two scores' lookups)."""
        in_lexical = {rowid for rowid, _ in lexical}
        in_semantic = {rowid for rowid, _ in semantic}
        only_by_meaning = [rowid for rowid in in_semantic if rowid not in in_lexical]
        only_by_words = [rowid for rowid in in_lexical if rowid not in in_semantic]

        def scores_found() -> tuple[dict[int, float], dict[int, float]]:
            return both(
                lambda: (lexical_of(only_by_meaning)
                         if self._levers.word_scores_for_close_matches else {}),
                lambda: (cosine_of(only_by_words)
                         if self._levers.cosines_for_word_matches else {}))

        if facets_wanted:
            (words_found, cosines_found), candidate_facets = both(
                scores_found,
                lambda: self._store.said_by_and_when(list(in_lexical | in_semantic)))
        else:
            (words_found, cosines_found), candidate_facets = scores_found(), {}
        return (_best_first(lexical, words_found), _best_first(semantic, cosines_found),
                candidate_facets)

    def forget(self, episode_id: str) -> bool:
        """Delete an episode: its text, FTS row and vectors. False if there was none."""
        rowid = self._store.rowid_of(episode_id)
        if rowid is None:
            return False
        self._drop([rowid])
        return True

    def forget_many(self, episode_ids: Sequence[str]) -> int:
        """Delete these episodes (an import that failed half-way takes back its batches)."""
        rowids = self._store.rowids_of(episode_ids)
        if rowids:
            self._drop(rowids)
        return len(rowids)

    def purge_older_than(self, days: int, *, now: float | None = None) -> int:
        """Delete episodes older than ``days`` (0 keeps everything); returns how many."""
        if days <= 0:
            return 0
        cutoff = (time.time() if now is None else now) - days * 86_400
        rowids = self._store.rowids_created_before(cutoff)
        if rowids:
            self._drop(rowids)
            log.info("retention purge deleted %d episodes older than %d days", len(rowids), days)
        return len(rowids)

    def purge_team(self, team: str) -> int:
        """Delete every episode of one workspace (it uninstalled Thoth); how many."""
        rowids = self._store.rowids_of_team(team)
        if rowids:
            self._drop(rowids)
            log.info("purged the %d episodes of workspace %s", len(rowids), team)
        return len(rowids)

    def forget_dms_of(self, team: str, user: str) -> int:
        """Delete every exchange ``user`` had in a DM with Thoth in ``team`` (they asked to
        be forgotten); how many."""
        rowids = self._store.rowids_of_dms(team, user)
        if rowids:
            self._drop(rowids)
        return len(rowids)

    def set_feedback(self, episode_id: str, feedback: Feedback) -> bool:
        return self._store.set_feedback(episode_id, feedback)

    def _drop(self, rowids: Sequence[int]) -> None:
        self._store.delete(rowids)
        with self._index_lock:
            if self._index is not None and self._index.maps_saved_files:
                # Its mapping would keep the deleted files' forgotten vectors on disk: the
                # next recall loads the vectors from the database instead.
                self._index = None
            elif self._index is not None:
                self._index.remove(rowids)
            if self._graph_path is not None:
                # The saved graph holds their vectors: gone with them (built again later).
                forget_saved(self._graph_path)

    def _drop_index(self) -> None:
        """Let the index go: the next recall loads it again (the backfill, in this process,
        stored some episodes' vectors anew)."""
        with self._index_lock:
            self._index = None

    def _loaded_index(self) -> VectorIndex:
        """The in-memory index, brought up to date with writes from other processes.

        Our own writes update it directly. When another process has committed
        (``thoth episodes import`` beside a running bridge), the vectors it added
        are loaded; if it deleted any, the index is rebuilt so nothing forgotten
        lingers in memory.
        """
        with self._index_lock:
            version = self._store.data_version()
            if self._index is None:
                self._index, self._vectors_loaded = self._empty_index(), 0
                self._load_vectors_after(0)
            elif version != self._data_version:
                self._load_vectors_after(self._vectors_loaded)
                # A backfill beside this process replaces vectors: their old slots stay
                # allocated until the index is loaded anew.
                if (len(self._index) != self._store.vector_count()
                        or self._index.dead_slots > max(len(self._index) // 4, DEAD_SLOTS_KEPT)):
                    self._index = None  # let the stale matrix go before the new one fills
                    self._index, self._vectors_loaded = self._empty_index(), 0
                    self._load_vectors_after(0)
            self._data_version = version
            self._keep_graph(self._index)
            return self._index

    def _keep_graph(self, index: VectorIndex) -> None:
        """Give a large index its graph: the saved one if there is one, and a new one,
        built in a thread of its own, when it has none or it is stale (searches meanwhile
        scan exactly what the graph lacks). Under the index lock."""
        if not self._graph_idle.is_set() or not index.graph_is_stale():
            return
        if index.graph is None and self._graph_path is not None:
            # Saved after this index was loaded (or by an older Thoth, without its
            # vectors): matched to the vectors held here, its own map unused.
            saved = ApproximateIndex.restore(self._graph_path, index.dim)
            if saved is not None:
                index.attach(saved)
                if not index.graph_is_stale():
                    vectors = index.graph_vectors()
                    if saved.vectors is None and vectors is not None:
                        # An older Thoth's: saved again with its vectors, for the next
                        # process to map (seconds, not a build).
                        self._graph_idle.clear()
                        threading.Thread(target=self._save_graph, args=(index, saved, vectors),
                                         name="thoth-vector-graph", daemon=True).start()
                    return
        self._graph_idle.clear()
        threading.Thread(target=self._build_graph, args=(index, *index.snapshot()),
                         name="thoth-vector-graph", daemon=True).start()

    def _build_graph(self, index: VectorIndex, slots: npt.NDArray[np.int64],
                     rows: npt.NDArray[np.int64], vectors_of: VectorsOf) -> None:
        started = time.monotonic()
        try:
            graph = ApproximateIndex.built(index.dim, rows, slots, vectors_of)
            with self._index_lock:
                if self._index is index:
                    index.attach(graph)
            log.info("vector graph of %d vectors built in %.1f s", len(graph),
                     time.monotonic() - started)
            # Not saved when it holds vectors forgotten while it was built.
            if self._graph_path is not None and index.graph is graph and not index.dead_in_graph:
                # With its vectors, key by key: the next process maps them (vector_index.py).
                graph.save(self._graph_path,
                           lambda start, end: vectors_of(slots[start:end]))
                with self._index_lock:
                    # A forget while it was written found nothing saved to delete.
                    if self._index is not index or index.dead_in_graph:
                        forget_saved(self._graph_path)
        except Exception:  # recall goes on with the exact scan
            log.exception("building the vector graph failed; recall scans exactly")
        finally:
            self._graph_idle.set()

    def _save_graph(self, index: VectorIndex, graph: ApproximateIndex,
                    vectors: KeyVectors) -> None:
        path = self._graph_path
        try:
            if path is not None:
                graph.save(path, vectors)
                with self._index_lock:
                    # A vector forgotten while it was written is in it: not kept.
                    if index.graph is not graph or index.dead_in_graph:
                        forget_saved(path)
        except OSError:  # the next process loads its vectors instead of mapping them
            log.exception("saving the vector graph failed")
        finally:
            self._graph_idle.set()

    def vector_graph_ready(self, timeout: float) -> bool:
        """Wait until no graph is being built (benchmarks and tests time what serves)."""
        return self._graph_idle.wait(timeout)

    def _empty_index(self) -> VectorIndex:
        """An index sized for the stored vectors, so loading them never regrows it, on
        the saved graph and its vectors where there are both: those vectors stay on disk,
        memory-mapped, and only the ones it lacks are loaded into memory (one ``thoth
        recall`` at 100k episodes peaked at 620-627 MB holding them all as float16,
        413-423 MB mapping them; approximate_index.py says what a longer process holds)."""
        index = VectorIndex(self._embedder.dim)
        # Not restored here without its vectors: _keep_graph restores it after the
        # load (restoring it twice left the first copy's memory to the process's peak).
        if self._graph_path is not None and saved_with_vectors(self._graph_path):
            saved = ApproximateIndex.restore(self._graph_path, index.dim)
            if saved is not None and saved.vectors is not None:
                index.map_graph(saved)
        stored = self._store.vector_count()
        index.reserve(stored + stored // INDEX_HEADROOM_DIVISOR)
        return index

    def _load_vectors_after(self, vector_row: int) -> None:
        """Index the vectors stored after ``vector_row``. An episode indexed already is
        either one this process stored itself (the same vectors: skipped) or one stored
        anew by `thoth episodes backfill` (its old vectors replaced). Either may straddle
        two batches."""
        assert self._index is not None
        index = self._index
        # Episodes an earlier batch of this load settled: what follows of them is theirs.
        settled: set[int] = set()
        for owners, vectors, rows in self._store.iter_vectors(self._embedder.dim, after=vector_row):
            keep = np.ones(len(owners), dtype=np.bool_)
            by_episode: dict[int, list[int]] = {}
            for position, owner in enumerate(owners):
                by_episode.setdefault(owner.episode_rowid, []).append(position)
            for rowid, positions in by_episode.items():
                if rowid in settled or rowid not in index:
                    continue
                if index.holds(rowid, vectors[positions]):
                    keep[positions] = False
                else:
                    index.remove([rowid])
            settled.update(by_episode)
            if keep.all():
                index.add(owners, vectors, rows)
            elif keep.any():
                index.add([owner for owner, kept in zip(owners, keep, strict=True) if kept],
                          vectors[keep], rows[keep])
            self._vectors_loaded = int(rows[-1])


# Who said each candidate (their display name), and when: what the question's names
# and dates are matched against.
Facets = dict[int, tuple[str | None, float]]


@dataclass(frozen=True)
class _Named:
    """What a question names: people (first names) and windows of time."""

    speakers: frozenset[str]
    windows: tuple[tuple[float, float], ...]
    # Names the place calls someone by, and the name their turns carry (names_people_go_by).
    called: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.speakers or self.windows)


def _as_embedded(question: str, named: _Named) -> str:
    """The question as embedded: each name the place calls someone by replaced with the
    name their turns are embedded with ("Kate's hobbies" -> "Emi's hobbies")."""
    for name, person in named.called.items():
        # Split and joined, not re.sub's template: a display name may hold a backslash.
        question = person.join(re.split(rf"\b{re.escape(name)}\b", question,
                                        flags=re.IGNORECASE))
    return question


def _with_what_the_question_names(fused: dict[int, float], named: _Named,
                                  facets: Facets) -> dict[int, float]:
    """The scores raised for turns said by someone, or on a date, the question names."""
    if named.speakers:
        fused = with_named_speakers(
            fused, {rowid: who for rowid, (who, _) in facets.items()}, named.speakers)
    if named.windows:
        fused = with_named_dates(
            fused, {rowid: when for rowid, (_, when) in facets.items()}, named.windows)
    return fused


def _best_first(scored: list[tuple[int, float]],
                more: dict[int, float]) -> list[tuple[int, float]]:
    """``scored`` with ``more`` (scores of other episodes) merged in, best first."""
    if not more:
        return scored
    return sorted([*scored, *more.items()], key=lambda pair: -pair[1])


def _checked(episode: Episode) -> Episode:
    for column, text in (("user_text", episode.user_text), ("summary", episode.summary)):
        if len(text) > MAX_TEXT_CHARS:
            raise BadInput(
                f"episode {episode.id!r}: {column} is {len(text)} characters;"
                f" the limit is {MAX_TEXT_CHARS} (Slack's own message limit)"
            )
    if not episode.user_text.strip():
        raise BadInput(f"episode {episode.id!r}: user_text is empty")
    return episode


def _recalled_files(files: Sequence[EpisodeFile], question: str) -> tuple[RecalledFile, ...]:
    """An episode's files as recall shows them: each with the passage the question is about."""
    return tuple(RecalledFile(file.name, file.kind, file.permalink,
                              passage_for(file.extract, question), file.mimetype)
                 for file in files)


def redacted(episode: Episode) -> Episode:
    """The episode with every text of it redacted: its words, its reply, its files'."""
    return replace(
        episode, user_text=redact(episode.user_text), summary=redact(episode.summary),
        files=tuple(replace(file, name=redact(file.name), extract=redact(file.extract),
                            permalink=None if file.permalink is None else redact(file.permalink))
                    for file in episode.files))


def _owner(rowid: int, episode: Episode) -> ChunkOwner:
    return ChunkOwner(rowid, episode.team, episode.channel, episode.channel_type, episode.user)

