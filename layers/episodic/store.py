"""Episode rows, their word index and their chunk vectors in the database.

The store takes its ``Database``; it does no redaction, embedding or ranking
(see ``memory.py``). Visibility is applied inside the lexical query itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from layers.episodic.called_names import introduced_as, said_to
from layers.episodic.episode import EPISODE_FIELDS, Episode, EpisodeFile, Feedback
from layers.episodic.episode_filter import EpisodeFilter
from layers.episodic.vector_index import ChunkOwner
from layers.shared.errors import BadInput
from layers.shared.places import Viewer
from layers.shared.places.visibility import sql_predicate
from layers.shared.storage.batches import delete_in
from layers.shared.storage.connection import Connection
from layers.shared.storage.database import Database

# Stored vectors are float16 (see the migration); the index holds them as float32 values
# rounded the same way, so a new vector scores as it will after a restart.
VECTOR_DTYPE = np.dtype("<f2")

# The word search checks this many times the wanted hits for visibility at first.
LEXICAL_POOL = 4
# Rowids bound to one statement (SQLite's default limit is 32 766 parameters).
MAX_ROWIDS_A_QUERY = 1_600
COUNT_CACHE_SECONDS = 300.0
# Vectors read a batch when the index loads (iter_vectors says why so few). 5,000 left
# 9 MB more in a ``thoth recall`` at 100k episodes than 2,000, and loaded no faster.
VECTOR_LOAD_BATCH = 2_000
# The turn before lends its words (migration 6) when it was said in the same thread (or
# the same channel outside threads) at most this long before: after an hour's silence a
# turn starts a new conversation, even in a thread.
TURN_BEFORE_WITHIN_SECONDS = 3600.0
_AFTER_EVERY_ROWID = 2**62
# BM25 weight of each FTS5 column (user_name, user_text, summary, turn_before): the turn
# before's words count half as much as the episode's own. On LoCoMo's development
# conversations (whole-turn vectors, thread share 0.3) 0.3 and 0.6 gave the same R@5,
# .681, and 1.0 less, .676: half is their middle.
TURN_BEFORE_WEIGHT = 0.5
# The files' extracts (migration 9) count as the episode's own words.
_BM25 = f"bm25(episodes_fts, 1.0, 1.0, 1.0, {TURN_BEFORE_WEIGHT}, 1.0)"


def turn_before_of(this: str, *, by_someone_else: bool = False) -> str:
    """The query for the rowid of the turn before an episode whose columns are
    ``this``'s (a table alias, or ``:`` for parameters of the columns' names): its
    thread, by the thread walk index (migration 3), within the hour. Seen by exactly the
    people who see the episode: the same channel of the same type (a channel made public
    keeps its id), and in a DM the same person's (an import without channels gives every
    DM one id). The insert (here) and the backfill (backfill.py) both ask this;
    ``by_someone_else``, the last turn of another named person (who a name said in the
    episode is said to: called_names.py)."""
    def column(name: str) -> str:
        return f":{name}" if this == ":" else f'{this}."{name}"'

    someone_else = (f" AND n.user_name IS NOT NULL"
                    f" AND coalesce(n.\"user\", '') <> coalesce({column('user')}, '')"
                    if by_someone_else else "")
    return (
        f"SELECT n.rowid FROM episodes n WHERE n.team = {column('team')}"
        f" AND n.channel = {column('channel')}"
        f" AND coalesce(n.thread_ts, '') = coalesce({column('thread_ts')}, '')"
        f" AND n.channel_type = {column('channel_type')}"
        f" AND (n.channel_type <> 'im'"
        f" OR coalesce(n.\"user\", '') = coalesce({column('user')}, ''))"
        f"{someone_else}"
        f" AND (n.created_at, n.rowid) < ({column('created_at')}, {column('rowid')})"
        f" AND n.created_at >= {column('created_at')} - {TURN_BEFORE_WITHIN_SECONDS}"
        " ORDER BY n.created_at DESC, n.rowid DESC LIMIT 1"
    )


# A new episode's turn before, looked up before it is inserted (it has no rowid yet:
# every stored one is before it at the same instant).
_TURN_BEFORE = (f"SELECT t.rowid, t.user_text FROM episodes t WHERE t.rowid = ("
                f"{turn_before_of(':')})")

# Who a name said in a turn is said to: the last other named person who spoke in its
# thread within the hour, as the turn before is found.
_LAST_OTHER_SPEAKER = (f"SELECT t.user_name, t.rowid FROM episodes t WHERE t.rowid = ("
                       f"{turn_before_of(':', by_someone_else=True)})")

# The episodes table's columns are the Episode record's fields, by name (the table adds
# its rowid, its embedding model and its search index): a new column is its migration
# and a field.
EPISODE_COLUMNS = ", ".join(f'"{name}"' if name == "user" else name for name in EPISODE_FIELDS)


@dataclass(frozen=True)
class StoredChunks:
    """One episode ready to insert: its row and one vector per chunk."""

    episode: Episode
    vectors: npt.NDArray[np.float32]


class EpisodeStore:
    """CRUD and lexical search over the ``episodes`` tables."""

    def __init__(self, db: Database, embedding_model: str) -> None:
        self._db = db
        self._embedding_model = embedding_model
        self._counts: dict[str, tuple[int, float]] = {}

    def insert(self, items: Sequence[StoredChunks]) -> list[int]:
        """Insert all items in one transaction (all or nothing); returns their rowids."""
        rowids: list[int] = []
        with self._db.write() as conn:
            for item in items:
                rowids.append(self._insert_one(conn, item))
        return rowids

    def _insert_one(self, conn: Connection, item: StoredChunks) -> int:
        ep = item.episode
        before = conn.execute(_TURN_BEFORE, {
            "team": ep.team, "channel": ep.channel, "thread_ts": ep.thread_ts,
            "channel_type": ep.channel_type, "user": ep.user, "created_at": ep.created_at,
            "rowid": _AFTER_EVERY_ROWID,
        }).fetchone()
        try:
            cursor = conn.execute(
                f"INSERT INTO episodes ({EPISODE_COLUMNS}, embedding_model, turn_before_rowid,"
                f" turn_before, files_text)"
                f" VALUES ({', '.join('?' * (len(EPISODE_FIELDS) + 4))}) RETURNING rowid",
                (*episode_row(ep, self._embedding_model),
                 *((int(before[0]), str(before[1])) if before else (None, "")),
                 files_text(ep.files)),
            )
        except self._db.duplicate_key_errors as error:
            raise BadInput(f"episode id {ep.id!r} already exists") from error
        rowid = int(cursor.fetchone()[0])
        if ep.files:
            conn.executemany(
                "INSERT INTO episode_files (episode_rowid, position, name, kind, size,"
                " mimetype, permalink, extract, unread) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(rowid, position, file.name, file.kind, file.size, file.mimetype,
                  file.permalink, file.extract, file.unread)
                 for position, file in enumerate(ep.files)],
            )
        conn.executemany(
            "INSERT INTO episode_vectors (episode_rowid, chunk, vector) VALUES (?, ?, ?)",
            [(rowid, index, vector.astype(VECTOR_DTYPE).tobytes())
             for index, vector in enumerate(item.vectors)],
        )
        keep_names_called(conn, rowid, ep)
        return rowid

    def people_called(self, team: str, channel: str,
                      names: Iterable[str]) -> dict[str, dict[str, int]]:
        """For each of ``names`` (lowercased), who it was said to name in this place, and
        how many times; a paused or archived turn (states.py), saying it or named by it,
        counts for nothing, as recall passes it by."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        found: dict[str, dict[str, int]] = {}
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT n.name, n.called, count(*) FROM episode_names n WHERE n.team = ?"
                f" AND n.channel = ? AND n.name IN ({', '.join('?' * len(wanted))})"
                " AND NOT EXISTS (SELECT 1 FROM episode_states s"
                "   WHERE s.episode_rowid IN (n.episode_rowid, n.called_rowid))"
                " GROUP BY n.name, n.called", (team, channel, *wanted)).fetchall()
        for name, person, count in rows:
            found.setdefault(str(name), {})[str(person)] = int(count)
        return found

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of these ids are already stored."""
        return {episode_id for episode_id, _ in self._stored(ids)}

    def rowids_of(self, ids: Iterable[str]) -> list[int]:
        """The rowids of those of these ids that are stored."""
        return [rowid for _, rowid in self._stored(ids)]

    def _stored(self, ids: Iterable[str]) -> list[tuple[str, int]]:
        """(id, rowid) of those of these ids that are stored, 500 to a query."""
        wanted = list(ids)
        found: list[tuple[str, int]] = []
        with self._db.read() as conn:
            for start in range(0, len(wanted), 500):
                batch = wanted[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = conn.execute(
                    f"SELECT id, rowid FROM episodes WHERE id IN ({marks})", batch
                )
                found.extend((str(row[0]), int(row[1])) for row in rows)
        return found

    def by_rowids(self, rowids: Sequence[int]) -> dict[int, Episode]:
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT rowid, {EPISODE_COLUMNS} FROM episodes WHERE rowid IN ({marks})",
                list(rowids),
            ).fetchall()
        return {int(row[0]): episode_of_row(row[1:]) for row in rows}

    def files_of(self, rowids: Sequence[int]) -> dict[int, tuple[EpisodeFile, ...]]:
        """The files of those of these episodes that had any, in the order shared."""
        found: dict[int, list[EpisodeFile]] = {}
        with self._db.read() as conn:
            for start in range(0, len(rowids), 500):
                batch = list(rowids[start : start + 500])
                marks = ",".join("?" * len(batch))
                for row in conn.execute(
                    "SELECT episode_rowid, name, kind, size, mimetype, permalink, extract,"
                    f" unread FROM episode_files WHERE episode_rowid IN ({marks})"
                    " ORDER BY episode_rowid, position", batch,
                ).fetchall():
                    found.setdefault(int(row[0]), []).append(EpisodeFile(
                        str(row[1]), str(row[2]), int(row[3]), row[4], row[5], str(row[6]),
                        row[7]))
        return {rowid: tuple(files) for rowid, files in found.items()}

    def with_files(self, episode: Episode) -> Episode:
        """``episode`` with its files (an episode is read without them)."""
        rowid = self.rowid_of(episode.id)
        files = () if rowid is None else self.files_of([rowid]).get(rowid, ())
        return replace(episode, files=files)

    def said_by_and_when(self, rowids: Sequence[int]) -> dict[int, tuple[str | None, float]]:
        """Who said each of these episodes (their display name), and when."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT rowid, user_name, created_at FROM episodes WHERE rowid IN ({marks})",
                list(rowids),
            ).fetchall()
        return {int(row[0]): (None if row[1] is None else str(row[1]), float(row[2]))
                for row in rows}

    def get(self, episode_id: str) -> Episode | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = ?", (episode_id,)
            ).fetchone()
        return episode_of_row(row) if row else None

    def get_visible(self, episode_id: str, viewer: Viewer) -> Episode | None:
        """The episode, when ``viewer`` may see it (the recall rule); else None."""
        predicate, params = sql_predicate(viewer)
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_prefixed('e.')} FROM episodes e WHERE e.id = :id AND {predicate}",
                {**params, "id": episode_id},
            ).fetchone()
        return episode_of_row(row) if row else None

    def rowid_of(self, episode_id: str) -> int | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT rowid FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        return int(row[0]) if row else None

    def delete(self, rowids: Sequence[int]) -> int:
        """Delete episodes with their FTS rows (trigger) and vectors (cascade)."""
        with self._db.write() as conn:
            return delete_in(conn, "episodes", "rowid", rowids)

    def rowids_created_before(self, timestamp: float) -> list[int]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT rowid FROM episodes WHERE created_at < ?", (timestamp,)
            ).fetchall()
        return [int(row[0]) for row in rows]

    def rowids_of_team(self, team: str) -> list[int]:
        with self._db.read() as conn:
            rows = conn.execute("SELECT rowid FROM episodes WHERE team = ?", (team,)).fetchall()
        return [int(row[0]) for row in rows]

    def rowids_of_dms(self, team: str, user: str) -> list[int]:
        """Every exchange ``user`` had in a DM with Thoth in ``team``."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT rowid FROM episodes WHERE team = ? AND channel_type = 'im'"
                ' AND "user" = ?', (team, user)).fetchall()
        return [int(row[0]) for row in rows]

    def people_named(self, name: str, team: str | None = None) -> list[tuple[str, str]]:
        """Who went by ``name`` (any case) when they spoke: (team, user id) pairs."""
        where, values = 'lower(user_name) = ? AND "user" IS NOT NULL', [name.lower()]
        if team:
            where, values = where + " AND team = ?", [*values, team]
        with self._db.read() as conn:
            rows = conn.execute(f'SELECT DISTINCT team, "user" FROM episodes WHERE {where}'
                                ' ORDER BY team, "user" LIMIT 20', values).fetchall()
        return [(str(row[0]), str(row[1])) for row in rows]

    def count_said_with_others(self, team: str, user: str) -> int:
        """How many exchanges ``user`` had in channels and group DMs of ``team``."""
        with self._db.read() as conn:
            return int(conn.execute(
                "SELECT count(*) FROM episodes WHERE team = ? AND channel_type <> 'im'"
                ' AND "user" = ?', (team, user)).fetchone()[0])

    def set_feedback(self, episode_id: str, feedback: Feedback) -> bool:
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE episodes SET feedback = ? WHERE id = ?", (int(feedback), episode_id)
            )
        return cursor.rowcount > 0

    def count(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])

    def session_feedback(self, session_id: str) -> list[Feedback]:
        """The ✅ / ❌ given to a session's episodes (those without feedback left out)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT feedback FROM episodes WHERE session_id = ? AND feedback != 0",
                (session_id,),
            ).fetchall()
        return [Feedback(int(row[0])) for row in rows]

    def iter_episodes(
        self, batch_size: int = 1000, viewer: Viewer | None = None
    ) -> Iterator[Episode]:
        """Every episode (``viewer``: every one they may see) with its files, oldest first,
        read in batches so export stays flat in memory."""
        predicate, params = sql_predicate(viewer) if viewer is not None else ("1 = 1", {})
        last = 0
        while True:
            with self._db.read() as conn:
                rows = conn.execute(
                    f"SELECT e.rowid, {_prefixed('e.')} FROM episodes e"
                    f" WHERE e.rowid > :last AND {predicate} ORDER BY e.rowid LIMIT :batch",
                    {**params, "last": last, "batch": batch_size},
                ).fetchall()
            if not rows:
                return
            files = self.files_of([int(row[0]) for row in rows])
            for row in rows:
                episode = episode_of_row(row[1:])
                shared = files.get(int(row[0]))
                yield replace(episode, files=shared) if shared else episode
            last = int(rows[-1][0])

    def iter_vectors(
        self, dim: int, *, after: int = 0
    ) -> Iterator[tuple[list[ChunkOwner], npt.NDArray[np.float16], npt.NDArray[np.int64]]]:
        """Chunk vectors stored after vector row ``after``, with their owners, in batches.

        Each batch comes with its vectors' rows, in order: the last is where to resume
        from. Batches are
        small because each row arrives as Python objects (about 1 KB a vector): larger
        ones raise peak memory while loading and load no faster.
        """
        last = after
        while True:
            with self._db.read() as conn:
                rows = conn.execute(
                    "SELECT v.rowid, v.episode_rowid, v.vector, e.team, e.channel,"
                    ' e.channel_type, e."user"'
                    " FROM episode_vectors v JOIN episodes e ON e.rowid = v.episode_rowid"
                    " WHERE v.rowid > ? ORDER BY v.rowid LIMIT ?",
                    (last, VECTOR_LOAD_BATCH),
                ).fetchall()
            if not rows:
                return
            owners = [ChunkOwner(int(r[1]), r[3], r[4], r[5], r[6]) for r in rows]
            vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype=VECTOR_DTYPE)
            last = int(rows[-1][0])
            yield owners, vectors.reshape(len(rows), dim), np.array([int(r[0]) for r in rows])

    def vector_rows_of(self, rowids: Sequence[int]) -> list[int]:
        """The ``episode_vectors`` rows of these episodes, episode by episode in the order
        given, each in chunk order (as ``insert`` stored them)."""
        found: dict[int, list[int]] = {}
        with self._db.read() as conn:
            for start in range(0, len(rowids), 500):
                batch = list(rowids[start : start + 500])
                marks = ",".join("?" * len(batch))
                for rowid, row in conn.execute(
                    f"SELECT episode_rowid, rowid FROM episode_vectors"
                    f" WHERE episode_rowid IN ({marks}) ORDER BY episode_rowid, chunk", batch,
                ).fetchall():
                    found.setdefault(int(rowid), []).append(int(row))
        return [row for rowid in rowids for row in found.get(rowid, [])]

    def vector_count(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute("SELECT count(*) FROM episode_vectors").fetchone()[0])

    def data_version(self) -> int:
        """Changes whenever another connection (another process) commits a write."""
        with self._db.read() as conn:
            if self._db.dialect == "sqlite":
                return int(conn.execute("PRAGMA data_version").fetchone()[0])
            # PostgreSQL has no such counter: the vectors' count and newest row change
            # with every insert and delete another replica commits.
            count, newest = conn.execute(
                "SELECT count(*), coalesce(max(rowid), 0) FROM episode_vectors"
            ).fetchone()
            return hash((int(count), int(newest)))

    def document_counts(self, words: Sequence[str]) -> dict[str, int]:
        """About how many episodes each word (stemmed as the index stems it) occurs in.

        Counts only steer how much lexical work a query may cost, so a few minutes
        of staleness is harmless; a zero is never cached, so new words are found.
        """
        now = time.monotonic()
        counts: dict[str, int] = {}
        with self._db.read() as conn:
            for word in words:
                cached = self._counts.get(word)
                if cached is not None and now - cached[1] < COUNT_CACHE_SECONDS:
                    counts[word] = cached[0]
                    continue
                row = conn.execute(
                    "SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH ?", (f'"{word}"',)
                ).fetchone()
                counts[word] = int(row[0])
                if counts[word]:
                    self._counts[word] = (counts[word], now)
        return counts

    def thread_neighbours(self, rowids: Sequence[int], viewer: Viewer,
                          reach: int = 1) -> dict[int, list[tuple[int, int]]]:
        """For each episode, the visible episodes up to ``reach`` turns before and after it
        in its thread, each with how many turns away it is.

        One statement: for each episode and each step, two subqueries that each seek the
        thread index (``episodes_thread_walk``: no thread is ``''``, ties broken by rowid)
        from that episode and read one row, ``step - 1`` rows on. The same plan serves
        every hit, so it is planned once.
        """
        if not rowids:
            return {}
        predicate, params = sql_predicate(viewer, alias="n")
        wanted = {f"r{index}": rowid for index, rowid in enumerate(rowids)}
        same = (
            "n.team = p.team AND n.channel = p.channel"
            " AND coalesce(n.thread_ts, '') = coalesce(p.thread_ts, '')"
            f" AND {predicate}"
        )
        walks = [
            f"(SELECT n.rowid FROM episodes n WHERE {same}"
            f" AND (n.created_at, n.rowid) {before_or_after} (p.created_at, p.rowid)"
            f" ORDER BY n.created_at {order}, n.rowid {order} LIMIT 1 OFFSET {step - 1})"
            for step in range(1, reach + 1)
            for before_or_after, order in (("<", "DESC"), (">", "ASC"))
        ]
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT p.rowid, {', '.join(walks)} FROM episodes p"
                f" WHERE p.rowid IN ({', '.join(':' + key for key in wanted)})",
                {**params, **wanted},
            ).fetchall()
        return {int(row[0]): [(int(found), 1 + index // 2)
                              for index, found in enumerate(row[1:]) if found is not None]
                for row in rows}

    def recent_asked_by(self, user: str, viewer: Viewer, limit: int) -> list[Episode]:
        """What ``user`` asked most recently, of what ``viewer`` may see, newest first."""
        return self.recent(viewer, EpisodeFilter(user=user), limit, live_only=True)

    def recent(self, viewer: Viewer, narrowed: EpisodeFilter, limit: int, *,
               older_than: tuple[float, str] | None = None,
               live_only: bool = False) -> list[Episode]:
        """The newest episodes ``viewer`` may see that ``narrowed`` admits; with
        ``older_than`` (an episode's time and id), those listed after it (a page on);
        ``live_only``: none paused or archived (what is offered back to a person)."""
        predicate, params = sql_predicate(viewer)
        condition, values = narrowed.sql()
        page, cursor = "", {}
        if live_only:
            page = (" AND NOT EXISTS (SELECT 1 FROM episode_states s"
                    " WHERE s.episode_rowid = e.rowid)")
        if older_than is not None:
            # Keyset paging: as quick on the thousandth page as on the first.
            page += " AND (e.created_at < :at OR (e.created_at = :at AND e.id < :id))"
            cursor = {"at": older_than[0], "id": older_than[1]}
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_prefixed('e.')} FROM episodes e"
                f" WHERE {predicate} AND {condition}{page}"
                " ORDER BY e.created_at DESC, e.id DESC LIMIT :limit",
                {**params, **values, **cursor, "limit": limit},
            ).fetchall()
        return [episode_of_row(row) for row in rows]

    def lexical_matches(self, match: str) -> list[tuple[int, float]]:
        """Every episode matching ``match`` with its FTS5 BM25, best first, whoever may see
        it (``visible_best`` narrows them). One pass serves both the word search and the
        word scores of what the search by meaning found. ``affordable_terms`` bounds the
        matches (about 2 000), so reading them all costs about as much as ranking them,
        which FTS5 does for any ORDER BY rank. SQLite's bm25() is lower-is-better; the
        sign is flipped so higher is better. Equal scores come by rowid, as on
        PostgreSQL (pg_search.py)."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT rowid, {_BM25} AS rank FROM episodes_fts"
                " WHERE episodes_fts MATCH ? ORDER BY rank, rowid",
                (match,),
            ).fetchall()
        return [(int(row[0]), -float(row[1])) for row in rows]

    def visible_best(self, ranked: Sequence[tuple[int, float]], viewer: Viewer,
                     limit: int) -> list[tuple[int, float]]:
        """The first ``limit`` of ``ranked`` that ``viewer`` may see. The best few are
        checked first (most are visible to most people); the rest only when too few are."""
        predicate, params = sql_predicate(viewer)
        chosen: list[tuple[int, float]] = []
        start, size = 0, limit * LEXICAL_POOL
        with self._db.read() as conn:
            while len(chosen) < limit and start < len(ranked):
                part = ranked[start : start + size]
                marks = ", ".join(f":r{index}" for index in range(len(part)))
                # NOT INDEXED: by rowid. Left to itself the planner walks the thread index
                # for the whole workspace (its first column is the team): 20 ms at 100k.
                visible = {int(row[0]) for row in conn.execute(
                    f"SELECT e.rowid FROM episodes e NOT INDEXED WHERE e.rowid IN ({marks})"
                    f" AND {predicate}",
                    {**params, **{f"r{index}": rowid for index, (rowid, _) in enumerate(part)}},
                ).fetchall()}
                chosen += [pair for pair in part if pair[0] in visible]
                start, size = start + size, min(size * 4, MAX_ROWIDS_A_QUERY)
        return chosen[:limit]


def keep_names_called(conn: Connection, rowid: int, ep: Episode) -> None:
    """The names episode ``rowid`` calls people by (called_names.py), each with who it
    names. The insert (here) and the backfill (backfill.py) both keep them. None in a DM
    with Thoth: no one else is spoken to there, and an import may give every person's DM
    one channel id."""
    if ep.channel_type == "im":
        return
    called: dict[str, tuple[str, int]] = {}  # name -> who, and the turn of theirs
    if ep.user_name:
        called.update(dict.fromkeys(introduced_as(ep.user_text), (ep.user_name, rowid)))
    spoken_to = [name for name in said_to(ep.user_text) if name not in called]
    if spoken_to:
        other = conn.execute(_LAST_OTHER_SPEAKER, {
            "team": ep.team, "channel": ep.channel, "thread_ts": ep.thread_ts,
            "channel_type": ep.channel_type, "user": ep.user,
            "created_at": ep.created_at, "rowid": rowid}).fetchone()
        if other is not None:
            called.update(dict.fromkeys(spoken_to, (str(other[0]), int(other[1]))))
    if called:
        conn.executemany(
            "INSERT INTO episode_names (episode_rowid, team, channel, name, called,"
            " called_rowid) VALUES (?, ?, ?, ?, ?, ?)",
            [(rowid, ep.team, ep.channel, name, person, their_turn)
             for name, (person, their_turn) in called.items()])


def files_text(files: Sequence[EpisodeFile]) -> str:
    """What of an episode's files is searched: each one's name, then its extract."""
    return "\n\n".join(f"{file.name}\n{file.extract}".strip() for file in files)


def episode_row(ep: Episode, embedding_model: str) -> tuple[Any, ...]:
    """An episode's values in the order of ``EPISODE_COLUMNS``, then its embedding model."""
    values = (getattr(ep, name) for name in EPISODE_FIELDS)
    return (*(int(v) if isinstance(v, Feedback) else v for v in values), embedding_model)


def _prefixed(alias: str) -> str:
    return ", ".join(alias + column.strip() for column in EPISODE_COLUMNS.split(","))


def episode_of_row(row: Sequence[Any]) -> Episode:
    """An Episode from the columns of EPISODE_COLUMNS, each to the field of its name."""
    values = dict(zip(EPISODE_FIELDS, row, strict=True))
    return Episode(**{
        **values,
        "created_at": float(values["created_at"]),
        "cost_usd": float(values["cost_usd"]),
        "feedback": Feedback(int(values["feedback"])),
    })
