"""The brain: a git repository of the agent's persona and skills, under THOTH_HOME.

Created from the shipped ``persona/`` and ``skills/`` with an initial commit. Each
change the agent makes is one commit of exactly the paths it wrote (``git commit
-- PATHS``), so whatever a person edited by hand elsewhere in the tree is left as
it is — never reset, never swept into the agent's commit. Writers are serialised
by a lock file, which also covers other processes (reflection runs in its own).
"""

from __future__ import annotations

import fcntl
import logging
import shutil
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git

from layers.errors import ConfigurationError

log = logging.getLogger(__name__)

AGENT_NAME = "Thoth"
AGENT_EMAIL = "thoth@localhost"
LOCK_FILE = "thoth-brain.lock"
PUSH_TIMEOUT_S = 30


class BrainError(ConfigurationError):
    """The brain repository is missing, broken or mid-operation; the message says the fix."""


@dataclass(frozen=True)
class Author:
    """Who a change is attributed to (the approver), as git's author."""

    name: str
    email: str = AGENT_EMAIL


class Brain:
    """The git-tracked brain at ``path``; ``commit()`` is the only way the agent writes."""

    def __init__(self, path: Path, *, remote: str | None = None) -> None:
        self.path = path
        self._remote = remote
        self._thread_lock = threading.RLock()
        self._depth = 0

    @property
    def persona_dir(self) -> Path:
        return self.path / "persona"

    @property
    def skills_dir(self) -> Path:
        return self.path / "skills"

    def exists(self) -> bool:
        return (self.path / ".git").exists()

    def create(self, shipped_persona: Path, shipped_skills: Path) -> bool:
        """Create the brain from the shipped files if it does not exist; True if created."""
        if self.exists():
            self.check()
            return False
        if self.path.exists() and any(self.path.iterdir()):
            raise BrainError(
                f"{self.path} exists but is not a git repository: move it away, or run"
                f" `git init` in it, and start Thoth again"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        for source, target in (
            (shipped_persona, self.persona_dir),
            (shipped_skills, self.skills_dir),
        ):
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("README.md"))
        repo = git.Repo.init(self.path, initial_branch="main")
        with repo.config_writer() as config:
            # Only this repository: commits name the approver, the committer is always Thoth.
            config.set_value("user", "name", AGENT_NAME)
            config.set_value("user", "email", AGENT_EMAIL)
        self.commit(
            ["persona", "skills"],
            "Create the brain from the shipped persona and skills\n\nWhy: first run.",
        )
        log.info("created the brain at %s", self.path)
        return True

    def check(self) -> None:
        """Raise ``BrainError`` (saying how to fix it) unless the repo can take a commit."""
        repo = self._repo()
        git_dir = Path(repo.git_dir)
        if (git_dir / "MERGE_HEAD").exists():
            raise BrainError(
                f"the brain at {self.path} is in the middle of a merge: finish it"
                f" (git -C {self.path} commit) or abort it (git -C {self.path} merge --abort)"
            )
        if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
            raise BrainError(
                f"the brain at {self.path} is in the middle of a rebase: run"
                f" git -C {self.path} rebase --continue or --abort"
            )
        if repo.head.is_detached:
            raise BrainError(
                f"the brain at {self.path} has a detached HEAD: run"
                f" git -C {self.path} switch main"
            )
        if repo.index.unmerged_blobs():
            raise BrainError(
                f"the brain at {self.path} has unresolved conflicts: resolve them and commit"
            )

    def commit(
        self,
        paths: Sequence[str],
        message: str,
        *,
        author: Author | None = None,
    ) -> str | None:
        """Commit exactly ``paths`` (added, changed or deleted); returns the new sha.

        None when they hold no change. Other files, staged or not, stay as they were.
        """
        with self._writing():
            repo = self._repo()
            self.check()
            repo.git.add("--all", "--", *paths)
            if not repo.git.diff("--cached", "--name-only", "--", *paths).strip():
                return None
            who = author or Author(AGENT_NAME)
            with repo.git.custom_environment(
                GIT_AUTHOR_NAME=who.name,
                GIT_AUTHOR_EMAIL=who.email,
                GIT_COMMITTER_NAME=AGENT_NAME,
                GIT_COMMITTER_EMAIL=AGENT_EMAIL,
            ):
                repo.git.commit("--no-verify", "-m", message, "--", *paths)
            sha = repo.head.commit.hexsha
        self._push(repo)
        return sha

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the brain's write lock around a read-modify-commit (e.g. MEMORY.md)."""
        with self._writing():
            yield

    def _repo(self) -> git.Repo:
        try:
            return git.Repo(self.path)
        except git.NoSuchPathError as error:
            raise BrainError(
                f"there is no brain at {self.path}: run `thoth init` to create it"
            ) from error
        except git.InvalidGitRepositoryError as error:
            raise BrainError(
                f"{self.path} is not a git repository (is .git missing or damaged?): move it"
                " away and run `thoth init` to create a new brain"
            ) from error

    @contextmanager
    def _writing(self) -> Iterator[None]:
        # Reentrant, so a read-modify-commit can hold it around ``commit()``. The file
        # lock is taken once, by the outermost holder: flock on a second descriptor of
        # the same file would wait for ourselves.
        with self._thread_lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            with open(self.path / ".git" / LOCK_FILE, "a+") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                self._depth = 1
                try:
                    yield
                finally:
                    self._depth = 0
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def _push(self, repo: git.Repo) -> None:
        if not self._remote:
            return
        try:
            repo.git.push(self._remote, "HEAD:refs/heads/main", kill_after_timeout=PUSH_TIMEOUT_S)
        except git.GitCommandError as error:
            # The commit is safe locally; the next successful push carries it too.
            log.warning("pushing the brain to %s failed: %s", self._remote, error.stderr.strip())
