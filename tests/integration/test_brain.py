"""The brain: real git repositories in temporary folders."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import subprocess
import threading
from pathlib import Path

import git
import pytest

from layers.layer_tables import LAYER_SCHEMAS
from layers.procedural.brain import Brain, BrainError
from layers.procedural.drafts import DraftState, SkillDrafts, remove_skill
from layers.procedural.memory_notes import MemoryNote, MemoryNotes
from layers.procedural.shipped import SHIPPED_PERSONA, SHIPPED_SKILLS
from layers.procedural.skills import SkillLibrary
from layers.shared.errors import BadInput
from layers.shared.storage.engines import open_sqlite
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

BODY = (
    "# Deploy checklist\n\n1. Check the error budget.\n2. Announce in #deploys.\n"
    "3. Run make deploy and watch the dashboards for fifteen minutes.\n4. Roll back on alerts.\n"
)


def _brain(tmp_path: Path, remote: str | None = None) -> Brain:
    brain = Brain(tmp_path / "brain", remote=remote)
    assert brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
    return brain


def _log(brain: Brain) -> list[str]:
    return [c.summary for c in git.Repo(brain.path).iter_commits()]


def _drafts(tmp_path: Path, brain: Brain, clock: list[float] | None = None) -> SkillDrafts:
    now = clock or [1_800_000_000.0]
    library = SkillLibrary((brain.skills_dir,))
    db = open_sqlite(tmp_path / "thoth.db", schemas=LAYER_SCHEMAS)
    return SkillDrafts(db, brain, library, clock=lambda: now[0])


def test_the_brain_is_created_once_from_the_shipped_files(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    assert _log(brain) == ["Create the brain from the shipped persona and skills"]
    assert (brain.persona_dir / "SOUL.md").read_text() == (SHIPPED_PERSONA / "SOUL.md").read_text()
    assert (brain.skills_dir / "incident-summary" / "manifest.json").exists()
    assert not Brain(brain.path).create(SHIPPED_PERSONA, SHIPPED_SKILLS)
    assert len(_log(brain)) == 1
    repo = git.Repo(brain.path)
    assert not repo.is_dirty(untracked_files=True)


def test_an_approved_draft_is_committed_with_who_and_why(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    drafts = _drafts(tmp_path, brain)
    draft = drafts.propose("deploy-checklist", "Steps to deploy the API safely", BODY,
                           proposed_by="reflection")
    assert draft.state is DraftState.PENDING and draft.version == "1.0.0"
    assert not (brain.skills_dir / "deploy-checklist").exists()  # outside the tree until approved

    accepted = drafts.approve(draft.id, by="U_FOUNDER")
    assert accepted.state is DraftState.ACCEPTED and accepted.decided_by == "U_FOUNDER"
    head = git.Repo(brain.path).head.commit
    assert head.hexsha == accepted.commit_sha
    assert head.summary == "Add skill deploy-checklist 1.0.0"
    assert "Approved-by: U_FOUNDER" in str(head.message) and head.author.name == "U_FOUNDER"
    manifest = json.loads((brain.skills_dir / "deploy-checklist" / "manifest.json").read_text())
    assert manifest["schema_version"] == "agentskills.io/v1" and manifest["version"] == "1.0.0"
    skill = SkillLibrary((brain.skills_dir,)).get("deploy-checklist")
    assert skill is not None and "Roll back on alerts" in skill.body


def test_a_draft_for_an_existing_skill_is_its_next_version(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    drafts = _drafts(tmp_path, brain)
    draft = drafts.propose("incident-summary", "A better incident summary", BODY)
    assert (draft.base_version, draft.version) == ("1.0.0", "1.1.0")
    before = (brain.skills_dir / "incident-summary" / "SKILL.md").read_text()
    assert "Impact" in before  # untouched until approval
    drafts.approve(draft.id, by="dana")
    assert _log(brain)[0] == "Update skill incident-summary to 1.1.0"
    manifest = json.loads((brain.skills_dir / "incident-summary" / "manifest.json").read_text())
    assert manifest["version"] == "1.1.0"


def test_reject_and_expiry_keep_who_and_when_but_not_the_text(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    clock = [1_800_000_000.0]
    drafts = _drafts(tmp_path, brain, clock)
    rejected = drafts.reject(drafts.propose("one-skill", "First", BODY).id, by="dana")
    assert rejected.state is DraftState.REJECTED and rejected.body == ""
    with pytest.raises(BadInput, match="already rejected"):
        drafts.approve(rejected.id, by="ari")

    old = drafts.propose("old-skill", "Old", BODY)
    clock[0] += 6 * 86_400
    fresh = drafts.propose("new-skill", "New", BODY)
    clock[0] += 2 * 86_400
    assert drafts.expire() == 1
    assert drafts.get(old.id).state is DraftState.EXPIRED
    assert drafts.get(fresh.id).state is DraftState.PENDING
    assert len(_log(brain)) == 1  # nothing of this reached the brain


def test_bad_drafts_are_refused(tmp_path: Path) -> None:
    drafts = _drafts(tmp_path, _brain(tmp_path))
    with pytest.raises(BadInput, match="must match"):
        drafts.propose("Bad Slug", "x", BODY)
    with pytest.raises(BadInput, match="body must be"):
        drafts.propose("tiny", "x", "do it")


def test_a_hand_edit_survives_an_agent_commit(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    user_md = brain.persona_dir / "USER.md"
    user_md.write_text(user_md.read_text() + "\nWe are nine people in Lisbon.\n")
    staged = brain.path / "notes.txt"
    staged.write_text("a file I staged myself\n")
    repo = git.Repo(brain.path)
    repo.git.add("notes.txt")

    drafts = _drafts(tmp_path, brain)
    drafts.approve(drafts.propose("deploy-checklist", "Deploy safely", BODY).id, by="dana")

    assert "nine people in Lisbon" in user_md.read_text()
    changed = set(repo.git.show("--name-only", "--format=", "HEAD").split())
    assert changed == {"skills/deploy-checklist/SKILL.md", "skills/deploy-checklist/manifest.json"}
    assert "persona/USER.md" in repo.git.diff("--name-only")  # still the user's, uncommitted
    assert "notes.txt" in repo.git.diff("--cached", "--name-only")  # still staged, not swept in


def test_remove_is_a_commit(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    remove_skill(brain, "handover-notes", by="dana")
    assert _log(brain)[0] == "Remove skill handover-notes"
    assert not (brain.skills_dir / "handover-notes").exists()
    assert "skills/handover-notes/SKILL.md" not in git.Repo(brain.path).git.ls_files()
    with pytest.raises(BadInput):
        remove_skill(brain, "handover-notes", by="dana")


def test_a_malformed_skill_is_skipped_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    brain = _brain(tmp_path)
    broken = brain.skills_dir / "broken-skill"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter here")
    (broken / "manifest.json").write_text("{}")
    bad_manifest = brain.skills_dir / "bad-manifest"
    bad_manifest.mkdir()
    (bad_manifest / "SKILL.md").write_text("---\nname: bad-manifest\ndescription: d\n---\nbody\n")
    (bad_manifest / "manifest.json").write_text('{"schema_version": "v0"}')
    (brain.skills_dir / "Not_A_Slug").mkdir()
    with caplog.at_level(logging.WARNING):
        library = SkillLibrary((brain.skills_dir,))
        skills = library.skills()
    assert set(skills) == {"incident-summary", "decision-record", "handover-notes"}
    assert "front matter" in library.problems["broken-skill"]
    assert "schema_version" in library.problems["bad-manifest"]
    assert "must match" in library.problems["Not_A_Slug"]
    assert "skipping skill" in caplog.text


def test_memory_notes_are_dated_redacted_committed_and_archived(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    notes = MemoryNotes(brain, max_lines=3, clock=lambda: 1_795_000_000.0)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    notes.append([MemoryNote(f"the CI token is {secret}", "Dana", "#eng", "🧠 reaction")])
    memory = (brain.persona_dir / "MEMORY.md").read_text()
    assert secret not in memory and "[REDACTED" in memory
    assert "- 2026-11-18 · the CI token is" in memory and "(Dana, #eng; 🧠 reaction)" in memory
    assert _log(brain)[0].startswith("Remember: the CI token is")
    for number in range(4):
        notes.append([MemoryNote(f"note {number}", "Ari", "a DM", "reflection")])
    kept = notes.recent(10)
    assert len(kept) == 3 and "note 3" in kept[-1]
    archive = (brain.persona_dir / "archive" / "MEMORY-2026-11-18.md").read_text()
    assert "the CI token is" in archive and "note 0" in archive
    assert git.Repo(brain.path).is_dirty() is False


def _append_notes(path: str, worker: int) -> None:
    notes = MemoryNotes(Brain(Path(path)), max_lines=1000)
    for number in range(5):
        notes.append([MemoryNote(f"process {worker} note {number}", "p", "x", "test")])


def test_concurrent_writers_do_not_corrupt_the_repo(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    threads = [
        threading.Thread(target=_append_notes, args=(str(brain.path), 100 + n)) for n in range(3)
    ]
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_append_notes, args=(str(brain.path), n)) for n in range(3)]
    for worker in [*threads, *processes]:
        worker.start()
    for thread in threads:
        thread.join(timeout=120)
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    memory = (brain.persona_dir / "MEMORY.md").read_text()
    for worker in [0, 1, 2, 100, 101, 102]:
        for number in range(5):
            assert f"process {worker} note {number} " in memory
    assert len(_log(brain)) == 1 + 30
    fsck = subprocess.run(["git", "-C", str(brain.path), "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def test_each_commit_is_pushed_to_the_remote_and_a_failed_push_is_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    remote = tmp_path / "remote.git"
    git.Repo.init(remote, bare=True)
    brain = _brain(tmp_path, remote=str(remote))
    MemoryNotes(brain).append([MemoryNote("pushed note", "Dana", "#eng", "🧠 reaction")])
    pushed = git.Repo(remote).commit("main")
    assert pushed.hexsha == git.Repo(brain.path).head.commit.hexsha

    broken = Brain(brain.path, remote=str(tmp_path / "missing.git"))
    with caplog.at_level(logging.WARNING):
        sha = MemoryNotes(broken).append([MemoryNote("local only", "Dana", "#eng", "test")])
    assert sha == git.Repo(brain.path).head.commit.hexsha
    # One line, from the health registry: the remote is failing, the commit kept here.
    assert "brain-remote is failing" in caplog.text and "kept here" in caplog.text


def test_a_broken_or_busy_repository_gets_an_error_that_says_the_fix(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    (brain.path / ".git" / "MERGE_HEAD").write_text("0" * 40 + "\n")
    with pytest.raises(BrainError, match="merge --abort"):
        MemoryNotes(brain).append([MemoryNote("x", "a", "b", "c")])
    (brain.path / ".git" / "MERGE_HEAD").unlink()

    not_a_repo = tmp_path / "other"
    not_a_repo.mkdir()
    (not_a_repo / "stuff.txt").write_text("mine")
    with pytest.raises(BrainError, match="not a git repository"):
        Brain(not_a_repo).create(SHIPPED_PERSONA, SHIPPED_SKILLS)
    assert (not_a_repo / "stuff.txt").read_text() == "mine"


def test_a_whole_token_never_reaches_the_commit_message(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0"
    MemoryNotes(brain).append([MemoryNote(f"{token} is the deploy token", "Dana", "#eng", "x")])
    message = str(git.Repo(brain.path).head.commit.message)
    assert token[:12] not in message and "[REDACTED" in message


def test_hand_written_bullets_are_not_archived(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    memory = brain.persona_dir / "MEMORY.md"
    memory.write_text(memory.read_text() + "\n- Deploys only on Tuesdays (written by hand)\n")
    notes = MemoryNotes(brain, max_lines=2)
    for number in range(4):
        notes.append([MemoryNote(f"note {number}", "Ari", "a DM", "reflection")])
    assert "- Deploys only on Tuesdays (written by hand)" in memory.read_text()


def test_nothing_changes_when_the_repository_refuses(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    memory = brain.persona_dir / "MEMORY.md"
    before = memory.read_text()
    (brain.path / ".git" / "MERGE_HEAD").write_text("0" * 40 + "\n")
    with pytest.raises(BrainError):
        MemoryNotes(brain).append([MemoryNote("x", "a", "b", "c")])
    with pytest.raises(BrainError):
        remove_skill(brain, "handover-notes", by="dana")
    assert memory.read_text() == before
    assert (brain.skills_dir / "handover-notes" / "SKILL.md").exists()


def test_a_failed_commit_puts_the_files_back_and_leaves_the_draft_pending(
    tmp_path: Path,
) -> None:
    brain = _brain(tmp_path)
    drafts = _drafts(tmp_path, brain)
    draft = drafts.propose("deploy-checklist", "Deploy safely", BODY)
    # A person's git holds the index (Thoth's own runs no hooks, so none can fail it).
    hook = brain.path / ".git" / "hooks" / "prepare-commit-msg"
    hook.write_text("#!/bin/sh\nexec sleep 120\n")
    hook.chmod(0o755)
    (brain.persona_dir / "SOUL.md").write_text("Edited by hand.\n")
    running = subprocess.Popen(["git", "commit", "-qm", "by hand", "--", "persona/SOUL.md"],
                               cwd=brain.path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until((brain.path / ".git" / "index.lock").exists, 30)
        with pytest.raises(BrainError, match="index.lock"):
            drafts.approve(draft.id, by="dana")
        assert not (brain.skills_dir / "deploy-checklist").exists()
        assert drafts.get(draft.id).state is DraftState.PENDING
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
    hook.unlink()
    assert drafts.approve(draft.id, by="dana").state is DraftState.ACCEPTED


def test_approval_never_overwrites_unreviewed_work(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    drafts = _drafts(tmp_path, brain)
    first = drafts.propose("deploy-checklist", "Deploy safely", BODY)
    second = drafts.propose("deploy-checklist", "Deploy safely, v2", BODY + "5. Celebrate.\n")
    drafts.approve(first.id, by="dana")
    with pytest.raises(BadInput, match="propose the change again"):
        drafts.approve(second.id, by="dana")

    skill_md = brain.skills_dir / "deploy-checklist" / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "\n6. A hand-written step.\n")
    third = drafts.propose("deploy-checklist", "Deploy safely, v3", BODY)
    with pytest.raises(BadInput, match="uncommitted hand edits"):
        drafts.approve(third.id, by="dana")
    assert "A hand-written step." in skill_md.read_text()


def test_a_commit_killed_midway_is_recovered_and_committed_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    brain = _brain(tmp_path)
    note = MemoryNote("The demo moved to Thursday", "Dana", "#eng", "reflection")
    # The state a commit killed by a host restart leaves: the note written into MEMORY.md,
    # git killed while it held .git/index.lock. Thoth's own git runs no hooks, so a
    # person's commit of the same change is the one held (in prepare-commit-msg) and killed.
    scratch = _brain(tmp_path / "scratch")
    MemoryNotes(scratch, clock=lambda: 1_800_000_000.0).append([note])
    (brain.persona_dir / "MEMORY.md").write_text((scratch.persona_dir / "MEMORY.md").read_text())
    started = tmp_path / "git-is-committing"
    hook = brain.path / ".git" / "hooks" / "prepare-commit-msg"
    hook.write_text(f'#!/bin/sh\ntouch "{started}"\nexec sleep 120\n')
    hook.chmod(0o755)
    child = subprocess.Popen(["git", "commit", "-qm", "x", "--", "persona/MEMORY.md"],
                             cwd=brain.path, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(started.exists, 60)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # git and the hook at once
        child.wait()
    hook.unlink()
    memory = brain.persona_dir / "MEMORY.md"
    assert (brain.path / ".git" / "index.lock").exists()
    assert "The demo moved to Thursday" in memory.read_text()  # written, not committed
    assert git.Repo(brain.path).is_dirty()

    with caplog.at_level(logging.WARNING, logger="layers.procedural.brain"):
        retried = MemoryNotes(brain, clock=lambda: 1_800_000_000.0).append([note])
    assert retried is not None
    assert "removed .git/index.lock" in caplog.text
    assert memory.read_text().count("The demo moved to Thursday") == 1
    assert [s for s in _log(brain) if s.startswith("Remember:")] == [
        "Remember: The demo moved to Thursday"
    ]
    assert not git.Repo(brain.path).is_dirty(untracked_files=True)
    drafts = _drafts(tmp_path, brain)
    approved = drafts.approve(drafts.propose("deploy-checklist", "Deploy safely", BODY).id,
                              by="dana")
    assert approved.commit_sha and _log(brain)[0] == "Add skill deploy-checklist 1.0.0"


def test_a_lock_held_by_a_running_git_command_is_left_alone(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    lock = brain.path / ".git" / "index.lock"
    # A person's own `git commit`, still running in the brain (held in a hook).
    hook = brain.path / ".git" / "hooks" / "prepare-commit-msg"
    hook.write_text("#!/bin/sh\nexec sleep 120\n")
    hook.chmod(0o755)
    (brain.persona_dir / "SOUL.md").write_text("Edited by hand.\n")
    running = subprocess.Popen(["git", "commit", "-m", "by hand", "--", "persona/SOUL.md"],
                               cwd=brain.path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until(lock.exists, 30)
        with pytest.raises(BrainError, match="index.lock"):
            MemoryNotes(brain).append([MemoryNote("a note", "Dana", "#eng", "test")])
        assert lock.exists()
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()


def test_the_check_reads_the_brains_own_repository_never_one_above_it(tmp_path: Path) -> None:
    # The brain sits inside someone's repository, and its own .git is damaged (empty):
    # git must not find the repository above and call the brain sound.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    brain = Brain(tmp_path / "brain")
    (brain.path / ".git").mkdir(parents=True)
    with pytest.raises(BrainError, match="not a git repository"):
        brain.check()
    with pytest.raises(BrainError, match="there is no brain"):
        Brain(tmp_path / "nowhere").check()


def test_git_hooks_in_the_brain_never_run_on_thoths_commits_and_pushes(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git.Repo.init(remote, bare=True, initial_branch="main")
    brain = _brain(tmp_path, remote=str(remote))
    ran = tmp_path / "hook-ran"
    for hooks in (brain.path / ".git" / "hooks", remote / "hooks"):
        for name in ("pre-commit", "post-commit", "pre-push", "post-merge", "post-rewrite"):
            hook = hooks / name
            hook.write_text(f"#!/bin/sh\necho {name} >> {ran}\n")
            hook.chmod(0o755)
    # Even a brain whose own config names a hooks folder.
    hooks_elsewhere = tmp_path / "hooks"
    hooks_elsewhere.mkdir()
    (hooks_elsewhere / "post-commit").write_text(f"#!/bin/sh\necho elsewhere >> {ran}\n")
    (hooks_elsewhere / "post-commit").chmod(0o755)
    with git.Repo(brain.path).config_writer() as config:
        config.set_value("core", "hooksPath", str(hooks_elsewhere))
    (brain.persona_dir / "MEMORY.md").write_text("- a note\n")
    assert brain.commit(["persona/MEMORY.md"], "Keep a note\n\nWhy: a test.")
    assert not ran.exists()


def test_the_home_the_database_and_the_brain_are_the_owners_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = open_sqlite(home / "thoth.db", schemas=LAYER_SCHEMAS)
    db.close()
    brain = _brain(home)
    assert (home.stat().st_mode & 0o777) == 0o700
    assert ((home / "thoth.db").stat().st_mode & 0o777) == 0o600
    assert (brain.path.stat().st_mode & 0o777) == 0o700


def test_a_change_is_undone_by_a_new_commit_and_one_built_upon_is_refused(
    tmp_path: Path,
) -> None:
    from layers.procedural.brain_history import diff_of, history, revert
    from layers.shared.errors import BadInput

    brain = _brain(tmp_path)
    rules = "persona/RULES.md"
    original = (brain.path / rules).read_text()
    first = brain.apply({rules: original + "- Answer in English.\n"}, "Add a rule")
    second = brain.apply({"persona/USER.md": "The team ships on Thursdays.\n"}, "About us")
    assert first and second
    assert "+- Answer in English." in diff_of(brain, first)
    undone = revert(brain, first, by="ari")
    assert (brain.path / rules).read_text() == original
    assert (brain.path / "persona/USER.md").read_text() == "The team ships on Thursdays.\n"
    newest = history(brain, 3)
    assert [c.sha for c in newest][:1] == [undone]
    assert newest[0].summary == 'Revert "Add a rule"' and newest[0].author == "ari"

    # A change a later commit built on cannot be undone cleanly: refused, nothing changed.
    third = brain.apply({rules: original + "- Be brief.\n"}, "Another rule")
    fourth = brain.apply({rules: original + "- Be very brief.\n"}, "Sharper")
    assert third and fourth
    with pytest.raises(BadInput, match="cannot be undone cleanly"):
        revert(brain, third, by="ari")
    assert (brain.path / rules).read_text() == original + "- Be very brief.\n"
    assert not git.Repo(brain.path).is_dirty(untracked_files=True)
    with pytest.raises(BadInput, match="not a commit id"):
        diff_of(brain, "../../etc")
    # MEMORY.md follows the notes' statuses: a note is withdrawn, never its commit undone.
    noted = brain.apply({"persona/MEMORY.md": "- Deploys need two approvals.\n"}, "A note")
    assert noted
    with pytest.raises(BadInput, match="MEMORY.md follows the memory notes"):
        revert(brain, noted, by="ari")
