"""Processes that share one brain remote, coordinated through the shared database.

Each `thoth serve` replica and worker keeps its own clone of the brain (under its own
``THOTH_HOME``) and ``BRAIN_REMOTE`` is the copy they share. Decided, over one writer
fed by a queue: any process writes, but only while it holds the database's
``brain-writer`` lock, and under it first catches up with the remote, commits, and
pushes; so every push is a fast-forward, each approval is one commit (the draft's
state changes once, under the database's write lock), and a reaction's reply can still
say the commit it made. After a push the process records the commit here; the others
read that row every couple of seconds and pull when it changed (``bridge/cli/
brain_following.py``), so a skill approved on one replica is used by all within
seconds. A process killed while holding the lock lets it go with its connection.

While the remote does not answer, each process goes on committing to its own clone
(``brain_remote.py``); its follower's step pushes what it kept as soon as the remote
answers again (``Brain.push_pending``), replaying it on what the others pushed first.
A replayed commit has a new sha: ``moved`` records it wherever the old one was kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager

from layers.procedural.brain import Brain
from layers.procedural.drafts import move_commit_shas
from layers.shared.redaction import redact
from layers.shared.storage.database import Database

log = logging.getLogger(__name__)

WRITER_LOCK = "brain-writer"
# How often a process looks for another's push, and the longest it waits after a pull
# that failed (an unreachable remote) before trying again.
FOLLOW_EVERY_S = 2.0
FOLLOW_BACKOFF_MAX_S = 60.0


class BrainPeers:
    """What the processes sharing ``remote`` tell each other through ``db``."""

    def __init__(self, db: Database, remote: str) -> None:
        self._db = db
        self._remote = remote

    def one_writer(self) -> AbstractContextManager[None]:
        """Held while this process writes the brain; the others wait."""
        return self._db.exclusive(WRITER_LOCK)

    def announce(self, sha: str) -> None:
        """``sha`` is now the remote's head."""
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO brain_heads (remote, sha, pushed_at) VALUES (?, ?, ?)"
                " ON CONFLICT (remote) DO UPDATE SET sha = excluded.sha,"
                " pushed_at = excluded.pushed_at",
                (self._remote, sha, time.time()),
            )

    def remote_down(self, why: str) -> None:
        """This process found the remote not answering: the others' writers skip it."""
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO brain_remote_down (remote, since, why) VALUES (?, ?, ?)"
                " ON CONFLICT (remote) DO NOTHING",
                # git's words can carry the remote's URL, and a token in it.
                (self._remote, time.time(), redact(why)),
            )

    def remote_answers(self) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM brain_remote_down WHERE remote = ?", (self._remote,))

    def remote_found_down(self) -> str | None:
        """Why another process found the remote down, if one did and none found it back."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT why FROM brain_remote_down WHERE remote = ?", (self._remote,)
            ).fetchone()
        return None if row is None else str(row[0])

    def moved(self, shas: Mapping[str, str]) -> None:
        """Our commits got new shas replayed on the others' (old → new)."""
        move_commit_shas(self._db, shas)

    def latest(self) -> str | None:
        """The commit last pushed to the remote by any of us (None before the first)."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT sha FROM brain_heads WHERE remote = ?", (self._remote,)
            ).fetchone()
        return str(row[0]) if row else None


class BrainFollower:
    """Pulls the brain when a process sharing its remote says it pushed (``step()``,
    every ``FOLLOW_EVERY_S``): one row read when nothing changed, a fetch when it did."""

    def __init__(
        self, brain: Brain, peers: BrainPeers, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._brain = brain
        self._peers = peers
        self._clock = clock
        self._followed: str | None = None
        self._retry_at = 0.0
        self._backoff_s = FOLLOW_EVERY_S
        self._push_failure: str | None = None

    def step(self) -> bool:
        """Push what this clone kept while the remote was away, then catch up if another
        process pushed; True when the brain's files changed."""
        # Before the pull's backoff: a push kept here goes out as soon as a probe finds
        # the remote back (push_pending paces its own probes), not a minute later.
        self._push_pending()
        if self._clock() < self._retry_at:
            return False
        try:
            latest = self._peers.latest()
            if latest is None or latest == self._followed:
                return False
            changed = self._brain.catch_up()
            if self._brain.has(latest):
                self._followed, self._backoff_s = latest, FOLLOW_EVERY_S
                if changed:
                    log.info("the brain caught up with %s", latest[:12])
                return changed
        except Exception as error:  # a broken brain, a database away: said, and retried
            log.warning("the brain could not follow its remote: %s", error)
        if self._brain.remote_is_down():
            # Said once by the health registry; the probe (push_pending) paces itself,
            # and the pull follows within a step of the remote's return, not a minute.
            self._retry_at = self._clock() + FOLLOW_EVERY_S
            return False
        self._retry_at = self._clock() + self._backoff_s
        self._backoff_s = min(self._backoff_s * 2, FOLLOW_BACKOFF_MAX_S)
        return False

    def _push_pending(self) -> None:
        try:
            self._brain.push_pending()
        except Exception as error:  # a database away (the writers' lock): said once
            said = str(error)
            if said != self._push_failure:
                log.warning("the brain could not push what it kept: %s", error)
            self._push_failure = said
        else:
            self._push_failure = None
