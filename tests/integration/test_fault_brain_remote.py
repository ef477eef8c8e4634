"""Issue 55, fault 6: the brain's git remote does not answer (replicas with BRAIN_REMOTE).

Two replicas, each its own clone, one database, and a real git server on loopback
(``tests/servers/git_remote.py``: ``git http-backend`` over smart HTTP) that hangs
(accepts, never answers) or refuses (nothing listening) on command. Approvals go on
being committed while it is away, fast; the follower's step pushes them when it is
back, each replica's in the order it made them, none lost, none twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
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
from layers.shared.dependency_health import BRAIN_REMOTE, DependencyHealth
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from tests.servers.git_remote import GitRemote
from tests.waiting import wait_until

OpenDatabase = Callable[[Sequence[Schema]], Database]
TIMEOUT_S = 1.5  # BRAIN_REMOTE_TIMEOUT_S for the test
PROBE_EVERY_S = 0.3
NOTES_EACH = 3
BODY = (
    "# Rollback\n\n1. Page the on-call and say in #deploys that a rollback has begun.\n"
    "2. Run make rollback and watch the error rate and the dashboards until they settle.\n"
)


class Replica:
    def __init__(self, name: str, home: Path, url: str, db: Database) -> None:
        self.name = name
        self.health = DependencyHealth()
        self.peers = BrainPeers(db, url)
        self.brain = Brain(home / "brain", remote=url, peers=self.peers, health=self.health,
                           remote_timeout_s=TIMEOUT_S, probe_every_s=PROBE_EVERY_S)
        self.brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
        self.notes = MemoryNotes(self.brain)
        self.drafts = SkillDrafts(db, self.brain, SkillLibrary((self.brain.skills_dir,)))
        self.follower = BrainFollower(self.brain, self.peers)
        self.made: list[str] = []  # the subjects of the commits it made, in order

    def note(self, number: int) -> float:
        started = time.monotonic()
        text = f"{self.name} note {number}"
        self.notes.append([MemoryNote(text, "Dana", "#eng", "🧠 reaction")])
        self.made.append(f"Remember: {text}")
        return time.monotonic() - started

    def approve(self, slug: str) -> tuple[str, str, float]:
        draft = self.drafts.propose(slug, description=f"How {self.name} rolls back", body=BODY)
        started = time.monotonic()
        approved = self.drafts.approve(draft.id, by=f"U-{self.name}")
        self.made.append(f"Add skill {slug} 1.0.0")
        assert approved.commit_sha is not None
        return draft.id, approved.commit_sha, time.monotonic() - started


def _caught_up(replica: Replica, head: str) -> bool:
    replica.follower.step()
    return replica.brain.has(head)


def _subjects(bare: Path) -> list[str]:
    """The remote main's commit subjects, oldest first."""
    return [str(c.summary) for c in reversed(list(git.Repo(bare).iter_commits("main")))]


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[GitRemote]:
    bare = tmp_path / "brain.git"
    git.Repo.init(bare, bare=True, initial_branch="main")
    with GitRemote(bare) as served:
        yield served


def test_approvals_go_on_while_the_remote_hangs_and_land_once_in_order_when_it_returns(
    tmp_path: Path, open_database: OpenDatabase, remote: GitRemote,
    caplog: pytest.LogCaptureFixture,
) -> None:
    one, two = (Replica(name, tmp_path / name, remote.url, open_database(LAYER_SCHEMAS))
                for name in ("one", "two"))
    assert _subjects(remote.bare) == ["Create the brain from the shipped persona and skills"]

    remote.hang()
    took: list[float] = []
    with caplog.at_level(logging.INFO):
        for number in range(NOTES_EACH):
            took += [one.note(number), two.note(number)]
        one_draft, one_sha, one_took = one.approve("rollback-one")
        two_draft, two_sha, two_took = two.approve("rollback-two")
        took += [one_took, two_took]

        # Recorded while the remote hangs: the first write found it out (one fetch
        # killed at the timeout) and told the other replica through the database;
        # every later write, on either, skipped it.
        assert sorted(took)[-2] < TIMEOUT_S / 2, took
        assert max(took) < TIMEOUT_S + 2.0, took
        assert "another replica's fetch failed" in two.health.summary()
        for replica in (one, two):
            assert replica.health.is_failing(BRAIN_REMOTE)
            assert replica.health.summary().startswith("degraded: brain-remote")
        assert one.drafts.get(one_draft).state is DraftState.ACCEPTED
        assert len(_subjects(remote.bare)) == 1  # nothing reached it

        returned = time.monotonic()
        remote.back()
        # The first replica to find it back pushes its commits as they are; the other
        # replays its own on them (new shas) and pushes: both land, by themselves (the
        # followers' steps, as serve and worker run them every 2 s).
        everything = 1 + 2 * (NOTES_EACH + 1)
        wait_until(lambda: (one.follower.step(), two.follower.step())
                   and len(_subjects(remote.bare)) == everything, 10)
        recovered_s = time.monotonic() - returned
    assert recovered_s < 5, recovered_s

    subjects = _subjects(remote.bare)
    assert len(subjects) == len(set(subjects)) == everything  # none lost, none twice
    for replica in (one, two):
        assert [s for s in subjects if s in replica.made] == replica.made  # in order
    history = list(git.Repo(remote.bare).iter_commits("main"))
    assert all(len(commit.parents) <= 1 for commit in history)  # linear

    # The replica that pushed second had its commits replayed on the other's: each
    # draft records the commit the remote holds, the one that installs its skill.
    shas = {one_draft: one_sha, two_draft: two_sha}
    recorded = {draft: (one if draft == one_draft else two).drafts.get(draft).commit_sha
                for draft in shas}
    assert sum(recorded[draft] != sha for draft, sha in shas.items()) == 1  # one moved
    for draft, slug in ((one_draft, "rollback-one"), (two_draft, "rollback-two")):
        sha = recorded[draft]
        assert sha is not None and sha in {commit.hexsha for commit in history}
        assert f"skills/{slug}/SKILL.md" in git.Repo(remote.bare).git.show(
            "--name-only", "--format=", sha)

    # Both clones end on the remote's head; health is back; said once each way.
    for replica in (one, two):
        wait_until(partial(_caught_up, replica, history[0].hexsha), 10)
        assert not replica.health.is_failing(BRAIN_REMOTE)
    assert caplog.text.count("brain-remote is failing") == 2
    assert caplog.text.count("brain-remote is back") == 2
    assert not [r for r in caplog.records if r.exc_info]  # no tracebacks


def test_a_refused_remote_costs_nothing_and_is_pushed_to_when_it_listens_again(
    tmp_path: Path, open_database: OpenDatabase, remote: GitRemote,
) -> None:
    one = Replica("one", tmp_path / "one", remote.url, open_database(LAYER_SCHEMAS))
    remote.refuse()
    took = [one.note(number) for number in range(NOTES_EACH)]
    assert max(took) < 1.0, took  # connection refused is said at once
    assert one.health.is_failing(BRAIN_REMOTE)
    assert not one.follower.step()  # still refused: the step neither pushes nor raises

    remote.back()
    wait_until(lambda: one.follower.step() or len(_subjects(remote.bare)) == 1 + NOTES_EACH, 10)
    assert _subjects(remote.bare)[1:] == one.made
    assert not one.health.is_failing(BRAIN_REMOTE)


def test_a_push_that_landed_but_was_not_answered_is_not_pushed_twice(
    tmp_path: Path, open_database: OpenDatabase, remote: GitRemote,
) -> None:
    """The remote took the push and hung before answering: the commit is there, the
    clone does not know it; the next sync finds it already there (no second copy)."""
    one = Replica("one", tmp_path / "one", remote.url, open_database(LAYER_SCHEMAS))
    one.note(0)
    local = git.Repo(one.brain.path)
    # As if the answer had been lost: the clone's record of the remote is one behind.
    local.git.update_ref("refs/thoth/remote-main", "HEAD~1")
    assert one.brain.push_pending() is False  # nothing new for the remote: not pushed
    one.note(1)
    assert _subjects(remote.bare)[1:] == one.made


def test_commits_that_conflict_with_the_remotes_stay_here_said_once_not_at_every_step(
    tmp_path: Path, open_database: OpenDatabase, remote: GitRemote,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Both replicas changed the same line while the remote was away: the first to push
    wins; the other's commit cannot be replayed and stays in its clone for a person to
    settle. The remote answers, so health does not say it is failing; the conflict is
    said once, not at every follower step."""
    one, two = (Replica(name, tmp_path / name, remote.url, open_database(LAYER_SCHEMAS))
                for name in ("one", "two"))
    remote.refuse()
    one.brain.apply({"persona/SOUL.md": "Calm.\n"}, "Soul from one")
    two.brain.apply({"persona/SOUL.md": "Brisk.\n"}, "Soul from two")
    remote.back()
    wait_until(lambda: one.follower.step() or "Soul from one" in _subjects(remote.bare), 10)
    with caplog.at_level(logging.WARNING):
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            two.follower.step()
            time.sleep(0.05)
    assert caplog.text.count("could not take") == 1
    assert "Soul from two" not in _subjects(remote.bare)
    assert git.Repo(two.brain.path).head.commit.summary == "Soul from two"  # kept
    assert not two.health.is_failing(BRAIN_REMOTE)


def test_a_replica_with_nothing_to_push_still_finds_the_remote_back(
    tmp_path: Path, open_database: OpenDatabase, remote: GitRemote,
) -> None:
    one = Replica("one", tmp_path / "one", remote.url, open_database(LAYER_SCHEMAS))
    remote.refuse()
    assert one.brain.catch_up() is False  # a pull that found it away
    assert one.health.is_failing(BRAIN_REMOTE)
    remote.back()
    wait_until(lambda: one.follower.step() or not one.health.is_failing(BRAIN_REMOTE), 10)
    assert one.health.summary() == "ok"
