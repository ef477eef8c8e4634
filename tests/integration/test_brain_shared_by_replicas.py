"""The brain shared by processes on several machines: each its own clone of one bare
remote (real git), coordinated through one database (on both engines)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import git
import pytest

from layers.layer_tables import LAYER_SCHEMAS
from layers.procedural.brain import Brain
from layers.procedural.brain_peers import BrainFollower, BrainPeers
from layers.procedural.drafts import DraftState, SkillDrafts
from layers.procedural.memory_notes import MemoryNote, MemoryNotes
from layers.procedural.shipped import SHIPPED_PERSONA, SHIPPED_SKILLS
from layers.procedural.skills import SkillLibrary
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from tests.waiting import wait_until

OpenDatabase = Callable[[Sequence[Schema]], Database]
BODY = (
    "# Rollback\n\n1. Page the on-call and say in #deploys that a rollback has begun.\n"
    "2. Run make rollback and watch the error rate and the dashboards until they settle.\n"
)


class Replica:
    """One machine: its own home (brain clone) and its own connection to the database."""

    def __init__(self, home: Path, remote: Path, db: Database) -> None:
        self.db = db
        self.peers = BrainPeers(db, str(remote))
        # A remote that failed is tried again at once here (the probe's pause is
        # test_fault_brain_remote.py's).
        self.brain = Brain(home / "brain", remote=str(remote), peers=self.peers,
                           probe_every_s=0.0)
        self.brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
        self.skills = SkillLibrary((self.brain.skills_dir,))
        self.drafts = SkillDrafts(db, self.brain, self.skills)
        self.follower = BrainFollower(self.brain, self.peers)


def _replicas(
    tmp_path: Path, open_database: OpenDatabase, count: int
) -> tuple[Path, list[Replica]]:
    remote = tmp_path / "brain-remote.git"
    git.Repo.init(remote, bare=True, initial_branch="main")
    return remote, [
        Replica(tmp_path / f"home-{n}", remote, open_database(LAYER_SCHEMAS)) for n in range(count)
    ]


def _head(brain: Brain) -> str:
    return str(git.Repo(brain.path).head.commit.hexsha)


def _history(remote: Path) -> list[git.Commit]:
    return list(git.Repo(remote).iter_commits("main"))


def test_replicas_start_from_one_brain_and_use_a_skill_approved_on_any_of_them(
    tmp_path: Path, open_database: OpenDatabase
) -> None:
    remote, (one, two, three) = _replicas(tmp_path, open_database, 3)
    # One history: the first replica made the brain, the others cloned it.
    assert _head(one.brain) == _head(two.brain) == _head(three.brain)
    assert len(_history(remote)) == 1

    draft = one.drafts.propose("rollback", description="How we roll back a deploy", body=BODY)
    # The approver's 👍 reaches two replicas at once (Slack retried, or two approvers).
    results: list[object] = []

    def approve(replica: Replica) -> None:
        try:
            results.append(replica.drafts.approve(draft.id, by="dana"))
        except Exception as error:
            results.append(error)

    threads = [threading.Thread(target=approve, args=(r,)) for r in (two, three)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    approved = [r for r in results if not isinstance(r, Exception)]
    assert len(approved) == 1 and one.drafts.get(draft.id).state is DraftState.ACCEPTED
    history = _history(remote)
    assert len(history) == 2 and "rollback" in str(history[0].message)  # committed once

    # Every other replica uses it after one follower step (every 2 s in serve and worker).
    for replica in (one, two, three):
        replica.follower.step()
        assert replica.skills.get("rollback") is not None
        assert _head(replica.brain) == history[0].hexsha
    assert not one.follower.step()  # nothing new: one row read, no git


def test_writers_on_several_replicas_take_turns_and_every_commit_reaches_the_remote(
    tmp_path: Path, open_database: OpenDatabase
) -> None:
    remote, replicas = _replicas(tmp_path, open_database, 2)

    def write_notes(index: int, replica: Replica) -> None:
        for number in range(3):
            MemoryNotes(replica.brain).append(
                [MemoryNote(f"writer {index} note {number}", "Dana", "#eng", "🧠 reaction")]
            )

    threads = [
        threading.Thread(target=write_notes, args=(index, replicas[index % 2]))
        for index in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    history = _history(remote)
    assert len(history) == 1 + 12
    assert all(len(commit.parents) <= 1 for commit in history)  # linear: no merge, no fork
    for replica in replicas:
        replica.follower.step()
        memory = (replica.brain.persona_dir / "MEMORY.md").read_text()
        assert all(f"writer {i} note {n}" in memory for i in range(4) for n in range(3))


def test_a_commit_whose_push_failed_is_replayed_on_the_others_and_pushed_later(
    tmp_path: Path, open_database: OpenDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    remote, (one, two) = _replicas(tmp_path, open_database, 2)
    away = remote.with_name("away.git")
    remote.rename(away)  # the remote cannot be reached from replica one
    with caplog.at_level(logging.WARNING):
        MemoryNotes(one.brain).append([MemoryNote("said while offline", "Dana", "#eng", "🧠")])
    assert "brain-remote is failing" in caplog.text
    away.rename(remote)
    # Two heard from one that the remote was down: it commits at once, and its probe
    # (a thread of its own) finds the remote back and pushes.
    MemoryNotes(two.brain).append([MemoryNote("said on two", "Lee", "#ops", "🧠")])
    wait_until(lambda: len(_history(remote)) == 2, 10)  # one's is still only in one's clone

    # One's next write is made locally at once (the remote was down when last tried) and
    # a probe finds it back: one's commits go on top of two's, then all are pushed.
    MemoryNotes(one.brain).append([MemoryNote("back online", "Dana", "#eng", "🧠")])
    wait_until(lambda: len(_history(remote)) == 4, 10)
    history = _history(remote)
    assert [c.summary for c in history[:3]] == [
        c.summary for c in git.Repo(one.brain.path).iter_commits("HEAD", max_count=3)
    ]
    assert len(history) == 4 and all(len(commit.parents) <= 1 for commit in history)
    two.follower.step()
    memory = (two.brain.persona_dir / "MEMORY.md").read_text()
    for note in ("said while offline", "said on two", "back online"):
        assert note in memory


def test_a_replica_that_cannot_read_the_shared_remote_does_not_start_a_brain_of_its_own(
    tmp_path: Path, open_database: OpenDatabase
) -> None:
    db = open_database(LAYER_SCHEMAS)
    missing = tmp_path / "missing.git"
    brain = Brain(tmp_path / "brain", remote=str(missing), peers=BrainPeers(db, str(missing)))
    with pytest.raises(Exception, match="cannot be read.*BRAIN_REMOTE"):
        brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
    assert not brain.exists()
