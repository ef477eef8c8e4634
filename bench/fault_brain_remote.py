"""Issue 55, fault 6: the brain's git remote does not answer for ``--down-s`` seconds (60 by
default) while approvals go on, on two replicas sharing it, then it is back.

Two brain writers as two replicas run them: each its own clone under its own home, one
database between them (the writers' lock, the pushed head, the skill drafts: SQLite by
default, ``--database postgresql`` for a real PostgreSQL), each with its follower stepping
every 2 s as ``thoth serve`` and ``thoth worker`` do. The remote is a real git server on
loopback (``tests/servers/git_remote.py``: ``git http-backend`` over smart HTTP), which
hangs (``--how hang``: accepts and never answers) or refuses (``--how refuse``: nothing
listens) for the outage. During it, each replica makes ``--approvals`` approvals, spread
over its first 80 %: skill drafts approved and memory notes kept, alternately, each one
commit. Production timings by default (``BRAIN_REMOTE_TIMEOUT_S`` 10 s, a probe every 5 s).

Printed (``bench/fault_figures.py``): no Slack delivery is involved, so the delivery
columns are 0; recovery = seconds from the remote's return to the remote holding every
approval's commit; writes lost = approvals not recorded (refused, or recorded without
their commit on the remote) plus drafts whose recorded commit is not on the remote; writes
doubled = commits on the remote more than once. The last line: approvals recorded, the
slowest and the median approval during the outage, and /health during and after.

    python bench/fault_brain_remote.py [--down-s 60] [--approvals 10] [--how hang|refuse]
        [--timeout-s 10] [--database sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import git  # noqa: E402

from bench.fault_figures import FaultFigures, print_table  # noqa: E402
from bench.slack_burst import _postgres  # noqa: E402
from layers.layer_tables import LAYER_SCHEMAS  # noqa: E402
from layers.procedural.brain import Brain  # noqa: E402
from layers.procedural.brain_peers import FOLLOW_EVERY_S, BrainFollower, BrainPeers  # noqa: E402
from layers.procedural.brain_remote import PROBE_EVERY_S, REMOTE_TIMEOUT_S  # noqa: E402
from layers.procedural.drafts import DraftState, SkillDrafts  # noqa: E402
from layers.procedural.memory_notes import MemoryNote, MemoryNotes  # noqa: E402
from layers.procedural.shipped import SHIPPED_PERSONA, SHIPPED_SKILLS  # noqa: E402
from layers.procedural.skills import SkillLibrary  # noqa: E402
from layers.shared.dependency_health import DependencyHealth  # noqa: E402
from layers.shared.storage.database import Database  # noqa: E402
from layers.shared.storage.engines import connect_postgres, open_sqlite  # noqa: E402
from tests.servers.git_remote import HANG, REFUSE, GitRemote  # noqa: E402

BODY = (
    "# Rollback\n\n1. Page the on-call and say in #deploys that a rollback has begun.\n"
    "2. Run make rollback and watch the error rate and the dashboards until they settle.\n"
)
# Past the remote's return: how long the remote is waited for to hold every commit.
SETTLE_S = 120.0


class Writer:
    """One replica's brain: its clone, its follower stepping as serve's scheduler does."""

    def __init__(self, name: str, home: Path, url: str, db: Database, timeout_s: float,
                 probe_every_s: float) -> None:
        self.name = name
        self.health = DependencyHealth()
        peers = BrainPeers(db, url)
        self.brain = Brain(home / "brain", remote=url, peers=peers, health=self.health,
                           remote_timeout_s=timeout_s, probe_every_s=probe_every_s)
        self.brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
        self.drafts = SkillDrafts(db, self.brain, SkillLibrary((self.brain.skills_dir,)))
        self.notes = MemoryNotes(self.brain)
        self.follower = BrainFollower(self.brain, peers)
        self.subjects: list[str] = []  # the commits its approvals made, in order
        self.draft_ids: list[str] = []
        self.took: list[float] = []
        self.refused = 0
        self._stop = threading.Event()
        self._following = threading.Thread(target=self._follow, daemon=True)

    def start(self) -> None:
        self._following.start()

    def stop(self) -> None:
        self._stop.set()
        self._following.join(timeout=60)

    def approve(self, number: int) -> None:
        started = time.monotonic()
        try:
            if number % 2 == 0:
                slug = f"bench-{self.name}-{number}"
                draft = self.drafts.propose(slug, description=f"How {self.name} rolls back",
                                            body=BODY)
                self.drafts.approve(draft.id, by=f"U-{self.name}")
                self.draft_ids.append(draft.id)
                self.subjects.append(f"Add skill {slug} 1.0.0")
            else:
                text = f"{self.name} keeps note {number}"
                self.notes.append([MemoryNote(text, "Dana", "#eng", "🧠 reaction")])
                self.subjects.append(f"Remember: {text}")
        except Exception as error:
            self.refused += 1
            print(f"{self.name}: approval {number} refused: {error}", file=sys.stderr)
        self.took.append(time.monotonic() - started)

    def _follow(self) -> None:
        while not self._stop.wait(FOLLOW_EVERY_S):
            self.follower.step()


def measure(down_s: float = 60.0, approvals: int = 10, how: str = HANG,
            timeout_s: float = REMOTE_TIMEOUT_S, probe_every_s: float = PROBE_EVERY_S,
            database: str = "sqlite") -> FaultFigures:
    with tempfile.TemporaryDirectory(prefix="thoth-fault-brain-") as temporary:
        directory = Path(temporary)
        bare = directory / "brain.git"
        git.Repo.init(bare, bare=True, initial_branch="main")
        server = _postgres(directory / "pg") if database == "postgresql" else None
        url = server.fresh_database() if server is not None else None
        try:
            with GitRemote(bare) as remote:
                writers = [
                    Writer(name, directory / name, remote.url, _open(directory, url),
                           timeout_s, probe_every_s)
                    for name in ("one", "two")
                ]
                return _run(remote, writers, down_s, approvals, how, timeout_s)
        finally:
            if server is not None:
                server.stop()


def _open(directory: Path, url: str | None) -> Database:
    if url is not None:
        return connect_postgres(url, schemas=LAYER_SCHEMAS)
    return open_sqlite(directory / "thoth.db", schemas=LAYER_SCHEMAS)


def _run(remote: GitRemote, writers: list[Writer], down_s: float, approvals: int,
         how: str, timeout_s: float) -> FaultFigures:
    for writer in writers:
        writer.start()
    remote.down_for(down_s, how)
    went_down = time.monotonic()
    gap_s = down_s * 0.8 / max(approvals, 1)

    def approve_all(writer: Writer) -> None:
        for number in range(approvals):
            writer.approve(number)
            time.sleep(max(0.0, went_down + (number + 1) * gap_s - time.monotonic()))

    threads = [threading.Thread(target=approve_all, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    during = {w.name: w.health.summary().split(" (")[0] for w in writers}
    while remote.mode != "up":
        time.sleep(0.01)
    returned = time.monotonic()
    expected = [subject for writer in writers for subject in writer.subjects]
    recovery_s = SETTLE_S
    while time.monotonic() - returned < SETTLE_S:
        if set(expected) <= set(_subjects(remote.bare)):
            recovery_s = time.monotonic() - returned
            break
        time.sleep(0.05)
    # Let the followers take each other's commits and say the remote is back.
    time.sleep(FOLLOW_EVERY_S * 2)
    for writer in writers:
        writer.stop()
    after = {w.name: w.health.summary() for w in writers}

    on_remote = Counter(_subjects(remote.bare))
    shas = {c.hexsha for c in git.Repo(remote.bare).iter_commits("main")}
    stale = sum(
        1 for writer in writers for draft_id in writer.draft_ids
        if (draft := writer.drafts.get(draft_id)).state is not DraftState.ACCEPTED
        or draft.commit_sha not in shas
    )
    missing = sum(1 for subject in expected if on_remote[subject] == 0)
    doubled = sum(count - 1 for count in on_remote.values() if count > 1)
    in_order = all([s for s in on_remote if s in w.subjects] == w.subjects for w in writers)
    took = sorted(t for w in writers for t in w.took)
    recorded = sum(len(w.subjects) for w in writers)
    return FaultFigures(
        fault="brain remote",
        sent=0, answered_once=0, told_failed=0, lost=0, doubled=0,
        recovery_s=recovery_s,
        writes_lost=sum(w.refused for w in writers) + missing + stale,
        writes_doubled=doubled,
        how=(f"remote {how} for {down_s:.0f} s (no Slack delivery involved: delivery columns"
             f" 0); approvals recorded {recorded}/{len(writers) * approvals}, each replica's"
             f" in order on the remote: {in_order}; approval during the outage: slowest"
             f" {took[-1]:.2f} s, median {statistics.median(took):.2f} s (fetch/push timeout"
             f" {timeout_s:g} s); /health during: {during}; after: {after}"),
    )


def _subjects(bare: Path) -> list[str]:
    try:
        return [str(c.summary) for c in reversed(list(git.Repo(bare).iter_commits("main")))]
    except (ValueError, git.GitCommandError):
        return []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down-s", type=float, default=60.0)
    parser.add_argument("--approvals", type=int, default=10, help="per replica")
    parser.add_argument("--how", choices=(HANG, REFUSE), default=HANG)
    parser.add_argument("--timeout-s", type=float, default=REMOTE_TIMEOUT_S,
                        help="BRAIN_REMOTE_TIMEOUT_S")
    parser.add_argument("--probe-every-s", type=float, default=PROBE_EVERY_S)
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args(argv)
    figures = measure(args.down_s, args.approvals, args.how, args.timeout_s,
                      args.probe_every_s, args.database)
    print_table([figures])
    return 0 if figures.met else 1


if __name__ == "__main__":
    raise SystemExit(main())
