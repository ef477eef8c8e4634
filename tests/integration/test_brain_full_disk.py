"""Issue 55, fault 5 (the brain's part): a full disk never leaves the brain with a
half-written file or commit, and an approval whose commit was made but whose record
was not is recorded when approved again. Real git on a real small tmpfs
(``tests/small_disk.py``: skipped where this process may not mount one)."""

from __future__ import annotations

import base64
import errno
import os
import sqlite3
from pathlib import Path

import git
import pytest

from layers.layer_tables import LAYER_SCHEMAS
from layers.procedural.brain import MEMORY_FILE, Brain, BrainError
from layers.procedural.brain_files import SCRATCH
from layers.procedural.drafts import DraftState, SkillDrafts
from layers.procedural.memory_notes import MemoryNote, MemoryNotes
from layers.procedural.shipped import SHIPPED_PERSONA, SHIPPED_SKILLS
from layers.procedural.skills import SkillLibrary
from layers.shared.errors import BadInput
from layers.shared.storage.engines import open_sqlite
from tests.small_disk import MB, small_disk_or_skip

ROOM = 64 * 1024  # what is left free on the full disk: a file fits, git's copy does not
BODY = (
    "# Rollback\n\n1. Page the on-call and say in #deploys that a rollback has begun.\n"
    "2. Run make rollback and watch the error rate and the dashboards until they settle.\n"
)


def _incompressible(size: int) -> str:
    # Random bytes as text: git's zlib copy of it is nearly as big as the file.
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()


def _state(brain: Brain) -> tuple[str, str, bytes, list[str]]:
    repo = git.Repo(brain.path)
    return (repo.head.commit.hexsha, repo.git.status("--porcelain", "--untracked-files=all"),
            (brain.path / MEMORY_FILE).read_bytes(),
            sorted(p.name for p in (brain.path / ".git" / SCRATCH).glob("*")))


def test_a_full_disk_leaves_every_brain_file_whole_and_no_commit_half_made(
    tmp_path: Path,
) -> None:
    with small_disk_or_skip(tmp_path / "disk", 4 * MB) as disk:
        brain = Brain(disk.path / "brain")
        brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
        before = _state(brain)
        memory = (brain.path / MEMORY_FILE).read_text()
        room = disk.path / "room"
        room.write_bytes(bytes(ROOM))
        disk.fill()
        room.unlink()

        # One file fits and is replaced, the next does not: the first is put back.
        with pytest.raises(OSError) as full:
            brain.apply({MEMORY_FILE: memory + "- one more line\n",
                         "skills/huge/SKILL.md": _incompressible(8 * ROOM)}, "Too big")
        assert full.value.errno == errno.ENOSPC
        assert _state(brain) == before
        assert not (brain.path / "skills" / "huge").exists()

        # The file fits, git's copy of it does not: the commit fails, and the file is
        # put back by a rename (writing the old text again would need the space too).
        with pytest.raises(BrainError, match="No space left|unable to"):
            brain.apply({MEMORY_FILE: memory + _incompressible(ROOM * 3 // 4)}, "No room")
        head, _, text, leftovers = _state(brain)
        assert (head, text, leftovers) == (before[0], before[2], [])

        # Room again: the next write commits, and nothing of the failed ones is in it.
        disk.free()
        sha = MemoryNotes(brain).append([MemoryNote("after the disk", "Dana", "#eng", "🧠")])
        repo = git.Repo(brain.path)
        assert sha == repo.head.commit.hexsha and repo.head.commit.parents[0].hexsha == head
        assert repo.git.show("--name-only", "--format=", sha).split() == [MEMORY_FILE]
        assert "No room" not in (brain.path / MEMORY_FILE).read_text()
        assert not brain.has_hand_edits(".")  # the index too: nothing left staged


def test_an_approval_committed_but_not_recorded_is_recorded_when_approved_again(
    tmp_path: Path,
) -> None:
    db = open_sqlite(tmp_path / "thoth.db", schemas=LAYER_SCHEMAS)
    brain = Brain(tmp_path / "brain")
    brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
    drafts = SkillDrafts(db, brain, SkillLibrary((brain.skills_dir,)))
    draft = drafts.propose("rollback", description="How we roll back a deploy", body=BODY)

    # The database refuses the record (as a full disk or a lost connection would),
    # after the brain's commit was made.
    other = sqlite3.connect(tmp_path / "thoth.db")
    other.execute("CREATE TRIGGER refuse BEFORE UPDATE ON skill_drafts"
                  " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    other.commit()
    with pytest.raises(sqlite3.DatabaseError, match="disk is full"):
        drafts.approve(draft.id, by="dana")
    committed = git.Repo(brain.path).head.commit
    assert f"skill draft {draft.id}" in str(committed.message)
    assert drafts.get(draft.id).state is DraftState.PENDING

    other.execute("DROP TRIGGER refuse")
    other.commit()
    other.close()
    # Approved again (by someone else, or the same click retried): not "installed now",
    # not a second commit: the first commit is recorded, with its approver.
    approved = drafts.approve(draft.id, by="lee")
    assert approved.state is DraftState.ACCEPTED
    assert approved.commit_sha == committed.hexsha and approved.decided_by == "dana"
    assert git.Repo(brain.path).head.commit == committed
    with pytest.raises(BadInput, match="already accepted"):
        drafts.approve(draft.id, by="lee")
    db.close()
