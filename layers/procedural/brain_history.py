"""The brain's history as people read it: its commits, what each changed, and undoing one.

A revert is a new commit (the history only grows), made as every brain write is: under
the brain's write lock, pushed to the shared remote where there is one. A change that
later commits built on cannot be undone cleanly; it is refused, and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from layers.procedural.brain import NO_HOOKS, Author, Brain, BrainError, _gitpython
from layers.shared.errors import BadInput

if TYPE_CHECKING:
    import git

# Kept in step with the memory notes' statuses (layers/notes): never undone by hand.
MEMORY_RECORD = "persona/MEMORY.md"
# A commit's diff as shown: enough for a skill or a persona edit, bounded for the page.
MAX_DIFF_CHARS = 20_000


@dataclass(frozen=True)
class BrainCommit:
    sha: str
    at: float
    author: str
    summary: str
    files: tuple[str, ...]


def history(brain: Brain, limit: int = 50) -> list[BrainCommit]:
    """The newest ``limit`` commits, newest first."""
    repo = _repo(brain)
    return [
        BrainCommit(commit.hexsha, float(commit.committed_date), str(commit.author.name),
                    str(commit.summary), tuple(sorted(str(path) for path in commit.stats.files)))
        for commit in repo.iter_commits("HEAD", max_count=limit)
    ]


def diff_of(brain: Brain, sha: str) -> str:
    """What the commit changed, as a unified diff (cut at ``MAX_DIFF_CHARS``)."""
    repo = _repo(brain)
    commit = _commit(repo, sha)
    if commit.parents:
        text = str(repo.git.diff(commit.parents[0].hexsha, commit.hexsha, "--no-color"))
    else:
        text = str(repo.git.show(commit.hexsha, "--format=", "--no-color"))
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS] + "\n… (cut)"


def memory_lines_added(brain: Brain, sha: str) -> list[str] | None:
    """The lines the commit added to MEMORY.md, when MEMORY.md is all it changed (a note
    kept); None for any other commit."""
    repo = _repo(brain)
    commit = _commit(repo, sha)
    if not commit.parents or sorted(str(p) for p in commit.stats.files) != [MEMORY_RECORD]:
        return None
    diff = str(repo.git.diff(commit.parents[0].hexsha, commit.hexsha, "--no-color",
                             "--unified=0", "--", MEMORY_RECORD))
    return [line[1:] for line in diff.splitlines()
            if line.startswith("+") and not line.startswith("+++")]


def revert(brain: Brain, sha: str, *, by: str) -> str:
    """Undo one commit as a new one attributed to ``by``; returns the new sha."""
    gitpython = _gitpython()
    with brain.writing():
        repo = _repo(brain)
        commit = _commit(repo, sha)
        if not commit.parents:
            raise BadInput("the brain's first commit cannot be reverted")
        paths = sorted(str(path) for path in commit.stats.files)
        if MEMORY_RECORD in paths:
            raise BadInput("MEMORY.md follows the memory notes: withdraw the note (its page"
                           " has the button) instead of undoing its commit")
        try:
            repo.git.revert("--no-commit", commit.hexsha)
        except gitpython.GitCommandError as error:
            # Whatever failed, nothing of it stays (a conflict leaves a revert under way).
            repo.git.reset("-q", "--hard", "HEAD")
            raise BadInput(
                f"{commit.hexsha[:10]} cannot be undone cleanly: later changes touch the same"
                " lines (undo those first)"
            ) from error
        summary = str(commit.summary)
        # The commit below stages exactly ``paths`` itself, deletions included.
        repo.git.reset("-q")
        message = (f'Revert "{summary}"\n\nThis reverts commit {commit.hexsha}.'
                   f"\nApproved-by: {by}")
        try:
            new_sha = brain.commit(paths, message, author=Author(by))
        except BrainError:
            repo.git.reset("--hard", "HEAD")
            raise
        if new_sha is None:
            raise BadInput(f"{commit.hexsha[:10]} changes nothing any more: nothing to undo")
        return new_sha


def _repo(brain: Brain) -> git.Repo:
    repo: git.Repo = _gitpython().Repo(brain.path)
    repo.git.update_environment(**NO_HOOKS)
    return repo


def _commit(repo: git.Repo, sha: str) -> git.Commit:
    gitpython = _gitpython()
    if not sha.isalnum() or not 7 <= len(sha) <= 40:
        raise BadInput(f"{sha!r} is not a commit id")
    try:
        return repo.commit(sha)
    except (gitpython.BadName, ValueError) as error:
        raise BadInput(f"the brain has no commit {sha}") from error
