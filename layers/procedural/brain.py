"""The brain: a git repository of the agent's persona and skills, under THOTH_HOME.

Created from the shipped ``persona/`` and ``skills/`` with an initial commit. Each
change the agent makes is one commit of exactly the paths it wrote (``git commit
-- PATHS``), so whatever a person edited by hand elsewhere in the tree is left as
it is — never reset, never swept into the agent's commit. Writers are serialised
by a lock file, which also covers other processes (reflection runs in its own), and,
when several machines share ``BRAIN_REMOTE``, by the database (``brain_peers.py``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from layers.procedural.bundle_check import checked_bundle
from layers.shared.errors import ConfigurationError
from layers.shared.redaction import redact

if TYPE_CHECKING:
    import git


class Peers(Protocol):
    """The other processes sharing the brain's remote (``brain_peers.BrainPeers``): one
    writes at a time, and each commit pushed is announced to the rest."""

    def one_writer(self) -> AbstractContextManager[None]: ...

    def announce(self, sha: str) -> None: ...

log = logging.getLogger(__name__)

AGENT_NAME = "Thoth"
AGENT_EMAIL = "thoth@localhost"
LOCK_FILE = "thoth-brain.lock"
PUSH_TIMEOUT_S = 30


class BrainError(ConfigurationError):
    """The brain repository is missing, broken or mid-operation; the message says the fix."""


# Every git call Thoth makes runs with hooks off: a hook in the brain (post-commit,
# pre-push, post-merge, put there by anyone who can write the folder) would otherwise run
# as Thoth on each approval, push and pull; so would a core.fsmonitor command. Passed as
# environment configuration, so it holds for brains made before this and for whatever
# their .git/config says.
NO_HOOKS = {"GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": os.devnull,
            "GIT_CONFIG_KEY_1": "core.fsmonitor", "GIT_CONFIG_VALUE_1": "false"}


def _gitpython() -> Any:
    # Imported on first use: GitPython refuses to import without a git executable,
    # and a machine without git must still run `thoth chat` on the shipped persona.
    try:
        import git
    except ImportError as error:
        raise BrainError(
            f"git is not usable ({error}): install it (apt-get install git) for the brain"
        ) from error
    return git


@dataclass(frozen=True)
class Author:
    """Who a change is attributed to (the approver), as git's author."""

    name: str
    email: str = AGENT_EMAIL


class Brain:
    """The git-tracked brain at ``path``; ``commit()`` is the only way the agent writes."""

    def __init__(
        self, path: Path, *, remote: str | None = None, peers: Peers | None = None
    ) -> None:
        self.path = path
        self._remote = remote
        # Other processes pushing to the same remote (None: this machine's alone).
        self._peers = peers if remote else None
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._peers_held = False

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
        if self.path.exists() and not self.path.is_dir():
            raise BrainError(
                f"{self.path} is a file, where the brain's folder belongs: move it away"
                " and start Thoth again"
            )
        if self.path.exists() and any(self.path.iterdir()):
            raise BrainError(
                f"{self.path} exists but is not a git repository: move it away, or run"
                f" `git init` in it, and start Thoth again"
            )
        with self._thread_lock, self._among_peers():
            # A remote that has a brain is where this one comes from (another replica's,
            # or this machine's before its home was lost): never a second history.
            if self._remote and self._remote_has_main():
                self._clone()
                return True
            self._create_from(shipped_persona, shipped_skills)
        return True

    def _create_from(self, shipped_persona: Path, shipped_skills: Path) -> None:
        # Only Thoth's user reads the brain: notes and skills come from private places.
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        for source, target in (
            (shipped_persona, self.persona_dir),
            (shipped_skills, self.skills_dir),
        ):
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("README.md"))
        repo = _gitpython().Repo.init(self.path, initial_branch="main")
        repo.git.update_environment(**NO_HOOKS)
        _set_identity(repo)
        self.commit(
            ["persona", "skills"],
            "Create the brain from the shipped persona and skills\n\nWhy: first run.",
        )
        log.info("created the brain at %s", self.path)

    def _remote_has_main(self) -> bool:
        try:
            git_command = _gitpython().cmd.Git()
            git_command.update_environment(**NO_HOOKS)
            found = git_command.ls_remote(
                self._remote, "refs/heads/main", kill_after_timeout=PUSH_TIMEOUT_S
            )
        except _gitpython().GitCommandError as error:
            failure = _git_failure(self.path, error)
            problem = f"the brain remote {self._remote} cannot be read ({failure})"
            if self._peers is not None:
                # Others share it: a brain begun here would be a history of its own.
                raise BrainError(f"{problem}: check BRAIN_REMOTE") from error
            log.warning("%s; starting the brain here, pushed when it can be", problem)
            return False
        return bool(str(found).strip())

    def _clone(self) -> None:
        """Start from the brain the other processes share, not a new history."""
        repo = _gitpython().Repo.clone_from(self._remote, self.path, branch="main", env=NO_HOOKS)
        repo.git.update_environment(**NO_HOOKS)
        self.path.chmod(0o700)
        _set_identity(repo)
        log.info("cloned the brain at %s from %s", self.path, self._remote)

    def catch_up(self) -> bool:
        """Pull what the others pushed, if this clone is only behind (the follower's
        step); True when the files changed. A clone with commits of its own waits for
        its next write, which catches up under the writers' lock."""
        if not self._remote:
            return False
        with self._thread_lock:
            if self._depth:
                return False  # a write is under way here; it catches up itself
            with open(self.path / ".git" / LOCK_FILE, "a+") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                try:
                    return self._catch_up(self._repo(), may_rebase=False)
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def has(self, sha: str) -> bool:
        """Whether this clone's HEAD includes the commit ``sha``."""
        gitpython = _gitpython()
        repo = self._repo()
        try:
            return bool(repo.is_ancestor(repo.commit(sha), repo.head.commit))
        except (ValueError, gitpython.BadName, gitpython.GitCommandError):
            return False  # not fetched yet

    def _catch_up(self, repo: git.Repo, *, may_rebase: bool) -> bool:
        """Bring this clone up to the remote's main: fast-forward when behind; with
        commits of its own as well (a push that failed), replay them on top."""
        gitpython = _gitpython()
        try:
            repo.git.fetch(self._remote, "refs/heads/main", kill_after_timeout=PUSH_TIMEOUT_S)
        except gitpython.GitCommandError as error:
            if "couldn't find remote ref" not in str(error.stderr):
                log.warning("fetching the brain from %s failed (%s); going on with this clone",
                            self._remote, _git_failure(self.path, error))
            return False
        theirs = repo.commit("FETCH_HEAD")
        ours = repo.head.commit
        if theirs == ours or repo.is_ancestor(theirs, ours):
            return False
        try:
            if repo.is_ancestor(ours, theirs):
                repo.git.merge("--ff-only", "--quiet", theirs.hexsha)
                return True
            if not may_rebase:
                return False
            _merge_notes_as_union(repo)
            # Hand edits are stashed around the replay and put back.
            repo.git.rebase("--autostash", "--quiet", theirs.hexsha)
            return True
        except gitpython.GitCommandError as error:
            if (Path(repo.git_dir) / "rebase-merge").exists():
                repo.git.rebase("--abort")
            log.warning("the brain could not take %s's changes (%s): it stays on its own"
                        " commits until that is fixed", self._remote,
                        _git_failure(self.path, error))
            return False

    def check(self) -> None:
        """Raise ``BrainError`` (saying how to fix it) unless the repo can take a commit."""
        # Two git commands, not GitPython: importing it is a tenth of a second that
        # every command would pay at start (bench/cli_start.py).
        if not self.path.is_dir():
            raise BrainError(f"there is no brain at {self.path}: run `thoth init` to create it")
        git_dir = Path(self._git_output("rev-parse", "--absolute-git-dir").strip())
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
        # "ref: refs/heads/main" on a branch (even before its first commit), a hash if not.
        if not (git_dir / "HEAD").read_text(errors="replace").startswith("ref: refs/heads/"):
            raise BrainError(
                f"the brain at {self.path} has a detached HEAD: run"
                f" git -C {self.path} switch main"
            )
        if self._git_output("ls-files", "--unmerged"):
            raise BrainError(
                f"the brain at {self.path} has unresolved conflicts: resolve them and commit"
            )

    def _git_output(self, *arguments: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(self.path), *arguments],
                # The brain's own repository, never one of a folder above it (a damaged
                # .git would otherwise send git looking upwards).
                env={**os.environ, **NO_HOOKS,
                     "GIT_CEILING_DIRECTORIES": str(self.path.parent)},
                capture_output=True,
                text=True,
                timeout=PUSH_TIMEOUT_S,
                check=False,
            )
        except OSError as error:
            raise BrainError(
                f"git is not usable ({error}): install it (apt-get install git) for the brain"
            ) from error
        except subprocess.TimeoutExpired as error:
            raise BrainError(f"git did not answer in the brain at {self.path}") from error
        if done.returncode != 0:
            raise BrainError(
                f"{self.path} is not a git repository (is .git missing or damaged?): move it"
                f" away and run `thoth init` to create a new brain ({done.stderr.strip()})"
            )
        return done.stdout

    def apply(
        self,
        changes: Mapping[str, str | None],
        message: str,
        *,
        author: Author | None = None,
    ) -> str | None:
        """Write files (None deletes one) and commit exactly them, all or nothing.

        Paths are relative to the brain. The repository is checked before any file
        is touched; if the commit fails, the files and their index entries are put
        back as they were. Returns the new sha, or None when nothing changed.

        The texts are redacted here, whoever wrote them (a hand edit to MEMORY.md
        included), so a secret is never committed, not even to be redacted later.
        """
        changes = {path: None if text is None else redact(text) for path, text in changes.items()}
        with self._writing():
            self.check()
            before = {path: self._read(path) for path in changes}
            try:
                for path, text in changes.items():
                    self._write(path, text)
                return self.commit(list(changes), message, author=author)
            except BaseException:
                for path, text in before.items():
                    self._write(path, text)
                self._unstage(list(changes))
                raise

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
        gitpython = _gitpython()
        with self._writing():
            repo = self._repo()
            self.check()
            who = author or Author(AGENT_NAME)
            try:
                repo.git.add("--all", "--", *paths)
                if not repo.git.diff("--cached", "--name-only", "--", *paths).strip():
                    return None
                with repo.git.custom_environment(
                    GIT_AUTHOR_NAME=who.name,
                    GIT_AUTHOR_EMAIL=who.email,
                    GIT_COMMITTER_NAME=AGENT_NAME,
                    GIT_COMMITTER_EMAIL=AGENT_EMAIL,
                ):
                    repo.git.commit("--no-verify", "-m", redact(message), "--", *paths)
            except gitpython.GitCommandError as error:
                raise BrainError(_git_failure(self.path, error)) from error
            sha = str(repo.head.commit.hexsha)
            # Still under the writers' lock, so no other process pushes in between.
            if self._push(repo) and self._peers is not None:
                self._peers.announce(sha)
        return sha

    def fast_forward_to_bundle(self, bundle: Path) -> str | None:
        """Take the main of a git bundle (the console's brain export) when it continues
        this brain's history: a fast-forward, never a rewrite. Returns the new head, None
        when the bundle holds nothing new. ``BadInput`` when it is not a bundle, its main
        does not continue this history, or anything it brings is not a plain file or
        holds a secret (``bundle_check``): what is committed here is redacted, and an
        import may not bring in what a commit here never could. The bundle is read in a
        quarantine repository first, so a refused one leaves nothing in the brain."""
        gitpython = _gitpython()
        with self._writing():
            repo = self._repo()
            self.check()
            if not checked_bundle(bundle, self.path):
                return None
            try:
                repo.git.fetch("--no-tags", str(bundle), f"+refs/heads/main:{IMPORTED_REF}")
                repo.git.merge("--ff-only", "--quiet", IMPORTED_REF)
            except gitpython.GitCommandError as error:
                raise BrainError(_git_failure(self.path, error)) from error
            finally:
                repo.git.update_ref("-d", IMPORTED_REF)
            sha = str(repo.head.commit.hexsha)
            if self._push(repo) and self._peers is not None:
                self._peers.announce(sha)
        return sha

    def has_hand_edits(self, path: str) -> bool:
        """Whether ``path`` (a file or folder) differs from the last commit, staged or not."""
        repo = self._repo()
        status = repo.git.status("--porcelain", "--untracked-files=all", "--", path)
        return bool(status.strip())

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the brain's write lock around a read-modify-commit (e.g. MEMORY.md)."""
        with self._writing():
            yield

    def _read(self, path: str) -> str | None:
        target = self.path / path
        return target.read_text(encoding="utf-8") if target.is_file() else None

    def _write(self, path: str, text: str | None) -> None:
        target = self.path / path
        if text is None:
            target.unlink(missing_ok=True)
            # Leave no empty folders behind (git does not track them anyway).
            folder = target.parent
            while folder != self.path and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
                folder = folder.parent
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def _unstage(self, paths: list[str]) -> None:
        try:
            self._repo().git.reset("-q", "HEAD", "--", *paths)
        except Exception:
            log.warning("could not unstage %s in the brain after a failed commit", paths)

    def _repo(self) -> git.Repo:
        gitpython = _gitpython()
        try:
            repo: git.Repo = gitpython.Repo(self.path)
            repo.git.update_environment(**NO_HOOKS)
            return repo
        except gitpython.NoSuchPathError as error:
            raise BrainError(
                f"there is no brain at {self.path}: run `thoth init` to create it"
            ) from error
        except gitpython.InvalidGitRepositoryError as error:
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
            # The database's lock first, then the file's, in every process: no two
            # ever wait for each other's second lock.
            with self._among_peers(), open(self.path / ".git" / LOCK_FILE, "a+") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                self._depth = 1
                try:
                    self._clear_stale_git_locks()
                    if self._remote:
                        self._catch_up(self._repo(), may_rebase=True)
                    yield
                finally:
                    self._depth = 0
                    fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def _among_peers(self) -> Iterator[None]:
        """The one-writer lock shared with other processes on the remote, held once."""
        if self._peers is None or self._peers_held:
            yield
            return
        with self._peers.one_writer():
            self._peers_held = True
            try:
                yield
            finally:
                self._peers_held = False

    def _clear_stale_git_locks(self) -> None:
        """Remove git's own lock files left by a git command that was killed.

        A reflection child killed mid-commit (a host restart, the OOM killer, a deploy)
        leaves ``.git/index.lock`` (or a ref's ``.lock``) behind, and every later write
        would fail on it until a person deleted it. Every Thoth writer holds the
        brain's lock, which we hold now, so such a file is stale unless a person's own
        git command is running in the brain: that is looked for first, and its locks
        are left alone. What the killed command half-did needs nothing more: its
        objects are unreferenced until a commit points at them, and the writer that
        was interrupted writes its files again and commits them once.
        """
        git_dir = self.path / ".git"
        locks = [git_dir / "index.lock", git_dir / "HEAD.lock", *git_dir.glob("refs/**/*.lock")]
        stale = [lock for lock in locks if lock.is_file()]
        if not stale or _git_running_in(self.path):
            return
        for lock in stale:
            lock.unlink(missing_ok=True)
            log.warning(
                "recovered the brain: removed %s, left by a git command that was killed"
                " mid-write; the interrupted change is committed again",
                lock.relative_to(self.path),
            )

    def _push(self, repo: git.Repo) -> bool:
        if not self._remote:
            return False
        try:
            repo.git.push(self._remote, "HEAD:refs/heads/main", kill_after_timeout=PUSH_TIMEOUT_S)
        except _gitpython().GitCommandError as error:
            # The commit is safe locally; the next write catches up and pushes it too.
            log.warning("pushing the brain to %s failed (%s); the next commit pushes again",
                        self._remote, _git_failure(self.path, error))
            return False
        return True


# The team's notes (memory_notes.py), lines appended at its end: two replicas' notes
# replayed on each other keep both (git's union merge), where a line merge would see a
# conflict.
MEMORY_FILE = "persona/MEMORY.md"
UNION_MERGED = (MEMORY_FILE,)


# Where an imported bundle's main waits while the brain fast-forwards to it.
IMPORTED_REF = "refs/thoth/imported"


def _merge_notes_as_union(repo: git.Repo) -> None:
    attributes = Path(repo.git_dir) / "info" / "attributes"
    wanted = [f"{path} merge=union" for path in UNION_MERGED]
    present = attributes.read_text().splitlines() if attributes.is_file() else []
    missing = [line for line in wanted if line not in present]
    if missing:
        attributes.parent.mkdir(exist_ok=True)
        attributes.write_text("".join(f"{line}\n" for line in [*present, *missing]))


def _set_identity(repo: git.Repo) -> None:
    with repo.config_writer() as config:
        # Only this repository: commits name the approver, the committer is always Thoth.
        config.set_value("user", "name", AGENT_NAME)
        config.set_value("user", "email", AGENT_EMAIL)


def _git_running_in(path: Path) -> bool:
    """Whether a live git process works in ``path`` (Linux's /proc; elsewhere, assumed not).

    A killed process is gone from /proc, or a zombie whose working directory can no
    longer be read: neither counts. Nor do GitPython's long-lived ``git cat-file``
    readers, which never take a lock.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return False
    inside = path.resolve()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("git"):
                continue
            if b"cat-file" in (entry / "cmdline").read_bytes():
                continue
            cwd = (entry / "cwd").resolve(strict=True)
        except OSError:
            continue
        if cwd == inside or inside in cwd.parents:
            return True
    return False


def _git_failure(path: Path, error: Any) -> str:
    lines = [line.strip() for line in str(error.stderr or "").splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith(("fatal:", "error:"))), None)
    detail = (detail or (lines[0] if lines else str(error))).strip("'\" ")
    hint = ""
    if "index.lock" in str(error.stderr):
        hint = f"; if no other git command is running, delete {path}/.git/index.lock"
    return f"git failed in the brain at {path}: {detail}{hint}"
