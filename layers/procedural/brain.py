"""The brain: a git repository of the agent's persona and skills, under THOTH_HOME.

Created from the shipped ``persona/`` and ``skills/`` with an initial commit. Each
change the agent makes is one commit of exactly the paths it wrote (``git commit
-- PATHS``), so whatever a person edited by hand elsewhere in the tree is left as
it is — never reset, never swept into the agent's commit. Writers are serialised
by a lock file, which also covers other processes (reflection runs in its own), and,
when several machines share ``BRAIN_REMOTE``, by the database (``brain_peers.py``).

A remote that hangs or refuses never holds a write up for more than one timeout
(``BRAIN_REMOTE_TIMEOUT_S``): commits are kept in the clone and pushed, in order, when
a probe finds it back (``brain_remote.py``, ``push_pending``). Files are replaced
atomically and a failed commit is undone by renames (``brain_files.py``), so a full disk
leaves neither a file cut short nor a commit half made.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from layers.procedural.brain_files import FileSet, clear_leftovers
from layers.procedural.brain_remote import PROBE_EVERY_S, REMOTE_TIMEOUT_S, RemoteWatch
from layers.procedural.bundle_check import checked_bundle
from layers.shared.dependency_health import DependencyHealth
from layers.shared.errors import ConfigurationError
from layers.shared.redaction import redact

if TYPE_CHECKING:
    import git


class Peers(Protocol):
    """The other processes sharing the brain's remote (``brain_peers.BrainPeers``): one
    writes at a time, and each commit pushed is announced to the rest."""

    def one_writer(self) -> AbstractContextManager[None]: ...

    def announce(self, sha: str) -> None: ...

    def moved(self, shas: Mapping[str, str]) -> None:
        """Commits of ours replayed on the others' (old sha → new): what recorded the
        old ones (a skill draft's commit) records the new."""

    def remote_down(self, why: str) -> None:
        """The remote did not answer this process: the others' writers skip it too."""

    def remote_answers(self) -> None: ...

    def remote_found_down(self) -> str | None:
        """Why another process found the remote down (None: none did, or it is back)."""

log = logging.getLogger(__name__)

AGENT_NAME = "Thoth"
AGENT_EMAIL = "thoth@localhost"
LOCK_FILE = "thoth-brain.lock"
# Local git commands only (the remote's have BRAIN_REMOTE_TIMEOUT_S): a stuck one is a bug.
LOCAL_TIMEOUT_S = 30


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
# A remote asking for a password would wait for a terminal nobody reads.
NO_PROMPTS = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}

# The remote's main as this clone last saw it (fetched or pushed): HEAD beyond it is
# commits made while the remote was away, which ``push_pending`` pushes.
REMOTE_SEEN_REF = "refs/thoth/remote-main"


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
        self,
        path: Path,
        *,
        remote: str | None = None,
        peers: Peers | None = None,
        health: DependencyHealth | None = None,
        remote_timeout_s: float = REMOTE_TIMEOUT_S,
        probe_every_s: float = PROBE_EVERY_S,
    ) -> None:
        self.path = path
        self._remote = remote
        # Other processes pushing to the same remote (None: this machine's alone).
        self._peers = peers if remote else None
        # Whether the remote answers; each fetch and push is killed past the timeout.
        self._watch = (RemoteWatch(remote, health=health, probe_every_s=probe_every_s)
                       if remote else None)
        self._remote_timeout_s = remote_timeout_s
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._peers_held = False
        # Index entries a failed commit left staged, unstaged by the next writer.
        self._unstage_later: set[str] = set()
        # A push the database did not hear of (it was away), told again by the next step.
        self._unannounced: str | None = None
        # The last (ours, theirs) whose replay conflicted: not tried again every step.
        self._replay_refused: tuple[str, str] | None = None
        # Set while a writer's probe thread runs (one at a time).
        self._probing = threading.Event()

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
            git_command.update_environment(**NO_PROMPTS)
            found = git_command.ls_remote(
                self._remote, "refs/heads/main", kill_after_timeout=self._remote_timeout_s
            )
        except _gitpython().GitCommandError as error:
            failure = _git_failure(self.path, error)
            problem = f"the brain remote {self._shown()} cannot be read ({failure})"
            if self._peers is not None:
                # Others share it: a brain begun here would be a history of its own.
                raise BrainError(f"{problem}: check BRAIN_REMOTE") from error
            log.warning("%s; starting the brain here, pushed when it can be", problem)
            return False
        return bool(str(found).strip())

    def _clone(self) -> None:
        """Start from the brain the other processes share, not a new history."""
        repo = _gitpython().Repo.clone_from(self._remote, self.path, branch="main",
                                            env={**NO_HOOKS, **NO_PROMPTS})
        repo.git.update_environment(**NO_HOOKS, **NO_PROMPTS)
        self.path.chmod(0o700)
        _set_identity(repo)
        repo.git.update_ref(REMOTE_SEEN_REF, repo.head.commit.hexsha)
        log.info("cloned the brain at %s from %s", self.path, self._shown())

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

    def push_pending(self) -> bool:
        """Push the commits this clone made while the remote was away (the follower's
        step calls it every couple of seconds); True when it pushed.

        Cheap when there is nothing to push (one local git command). A known-down remote
        is probed at most every ``probe_every_s``, outside the writers' lock, so a remote
        that still hangs holds no writer up; once it answers, the writers' lock is taken,
        the others' commits fetched and ours replayed on them (``_catch_up``), and the
        whole pushed: each clone's commits land in the order they were made here, after
        whatever the others pushed first, each once.
        """
        watch = self._watch
        if watch is None or not self.exists():
            return False
        with self._thread_lock:
            if self._depth:
                return False  # a write is under way here; it pushes itself
            repo = self._repo()
            ahead = self._ahead(repo)
            stuck = self._replay_refused is not None and self._replay_refused == (
                _sha(repo, "HEAD"), _sha(repo, REMOTE_SEEN_REF))
        if not ahead or stuck:
            # Stuck: ours conflict with the remote's, as last fetched (a person's fix, or
            # another replica's push the follower fetches, lets it try again). Nothing
            # to push, a known-down remote is still probed: health says when it is back.
            if watch.is_down() and watch.claim_probe():
                self._answers()
            self._announce_again()
            return False
        # The probe holds no lock: this process's writers go on committing meanwhile.
        if watch.is_down() and not (watch.claim_probe() and self._answers()):
            return False
        with self._writing():
            repo = self._repo()
            ahead = self._ahead(repo)
            if not ahead or not self._push(repo):
                return False
        log.info("pushed %d brain commit(s) kept here while %s did not answer",
                 ahead, watch.shown)
        return True

    def remote_is_down(self) -> bool:
        """Whether the remote is known not to answer (brain_remote.py)."""
        return self._watch is not None and self._watch.is_down()

    def _ahead(self, repo: git.Repo) -> int:
        """How many commits HEAD has that the remote had not when last seen; 1 when this
        clone never saw it (one sync finds out)."""
        try:
            return int(repo.git.rev_list("--count", f"{REMOTE_SEEN_REF}..HEAD"))
        except _gitpython().GitCommandError:
            return 1

    def _answers(self) -> bool:
        """Probe a known-down remote with the cheapest call there is."""
        assert self._watch is not None
        git_command = _gitpython().cmd.Git()
        git_command.update_environment(**NO_HOOKS, **NO_PROMPTS)
        try:
            git_command.ls_remote(self._remote, "refs/heads/main",
                                  kill_after_timeout=self._remote_timeout_s)
        except _gitpython().GitCommandError as error:
            self._remote_failed("probe", self._remote_failure(error))
            return False
        self._remote_answered()
        return True

    def _remote_answering(self) -> bool:
        """Whether a writer may call the remote: not when it is known down (then a
        probe, if due, runs on a thread of its own, and this writer goes on at once)."""
        watch = self._watch
        if watch is None:
            return False
        if not watch.is_down():
            return True
        if watch.probe_due() and not self._probing.is_set():
            self._probing.set()
            threading.Thread(target=self._probe_and_push, name="brain-probe",
                             daemon=True).start()
        return False

    def _probe_and_push(self) -> None:
        try:
            self.push_pending()
        except Exception as error:  # the database away (the writers' lock): said once
            log.warning("the brain could not push what it kept: %s", error)
        finally:
            self._probing.clear()

    def _fetch(self, repo: git.Repo) -> git.Commit | None:
        """The remote's main, fetched; None when it has none, or does not answer now."""
        watch = self._watch
        if watch is None or not self._remote_answering():
            return None
        try:
            repo.git.fetch(self._remote, "refs/heads/main",
                           kill_after_timeout=self._remote_timeout_s)
        except _gitpython().GitCommandError as error:
            if "couldn't find remote ref" in str(error.stderr):
                self._remote_answered()  # a remote nobody pushed to yet
            else:
                self._remote_failed("fetch", self._remote_failure(error))
            return None
        self._remote_answered()
        theirs = repo.commit("FETCH_HEAD")
        repo.git.update_ref(REMOTE_SEEN_REF, theirs.hexsha)
        return theirs

    def _catch_up(self, repo: git.Repo, *, may_rebase: bool) -> bool:
        """Bring this clone up to the remote's main: fast-forward when behind; with
        commits of its own as well (made while the remote was away), replay them on top."""
        gitpython = _gitpython()
        theirs = self._fetch(repo)
        if theirs is None:
            return False
        ours = repo.head.commit
        if theirs == ours or repo.is_ancestor(theirs, ours):
            return False
        try:
            if repo.is_ancestor(ours, theirs):
                repo.git.merge("--ff-only", "--quiet", theirs.hexsha)
                return True
            if not may_rebase or self._replay_refused == (ours.hexsha, theirs.hexsha):
                return False
            self._replay(repo, ours, theirs)
            return True
        except gitpython.GitCommandError as error:
            if (Path(repo.git_dir) / "rebase-merge").exists():
                repo.git.rebase("--abort")
            # Said once per conflict, not at every step that would try it again.
            self._replay_refused = (ours.hexsha, theirs.hexsha)
            log.warning("the brain could not take %s's changes (%s): it stays on its own"
                        " commits until that is fixed", self._shown(),
                        _git_failure(self.path, error))
            return False

    def _replay(self, repo: git.Repo, ours: git.Commit, theirs: git.Commit) -> None:
        """Rebase our commits on theirs, and tell what recorded our old shas the new ones.

        A commit is matched to its replayed self by author, author date and message,
        which a rebase keeps; one whose change the others already had (git drops it)
        is matched to theirs the same way, or stays as it was if none matches."""
        base = repo.merge_base(ours, theirs)[0]
        before = list(repo.iter_commits(f"{theirs.hexsha}..{ours.hexsha}"))
        _merge_notes_as_union(repo)
        # Hand edits are stashed around the replay and put back.
        repo.git.rebase("--autostash", "--quiet", theirs.hexsha)
        after: dict[tuple[str, int, str], list[str]] = {}
        for commit in repo.iter_commits(f"{base.hexsha}..HEAD"):
            after.setdefault(_identity(commit), []).append(commit.hexsha)
        moved: dict[str, str] = {}
        for commit in before:
            same = after.get(_identity(commit))
            if same:
                moved[commit.hexsha] = same.pop(0)
        log.info("replayed %d brain commit(s) made here on %s's newer ones",
                 len(before), self._shown())
        if moved and self._peers is not None:
            try:
                self._peers.moved(moved)
            except Exception as error:  # the commits are safe; only their records lag
                log.warning("the brain's replayed commits could not be recorded (%s): a"
                            " skill draft may show its old commit", error)

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
                timeout=LOCAL_TIMEOUT_S,
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
        is touched; each file is replaced atomically (a full disk never leaves one cut
        short), and if the commit fails the files are put back as they were by renames
        (``brain_files``: no space needed) and their index entries unstaged. Returns the
        new sha, or None when nothing changed.

        The texts are redacted here, whoever wrote them (a hand edit to MEMORY.md
        included), so a secret is never committed, not even to be redacted later.
        """
        changes = {path: None if text is None else redact(text) for path, text in changes.items()}
        with self._writing():
            self.check()
            files = FileSet(self.path, self.path / ".git")
            head = self._head()
            try:
                for path, text in changes.items():
                    files.write(path, text)
                sha = self.commit(list(changes), message, author=author)
            except BaseException:
                if self._head() != head:
                    # The commit was made (what failed came after it): the files are
                    # what HEAD holds now, and putting them back would undo it.
                    files.keep()
                    raise
                files.put_back()
                self._unstage(list(changes))
                raise
            files.keep()
            return sha

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
            # Still under the writers' lock, so no other process pushes in between. A
            # remote that does not answer keeps the commit here, for ``push_pending``.
            self._push(repo)
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
            self._push(repo)
        return sha

    def commit_saying(self, text: str) -> str | None:
        """The newest commit whose message holds ``text`` (a fixed string), or None."""
        found = self._repo().git.log("-n", "1", "-F", f"--grep={text}", "--format=%H", "HEAD")
        return str(found).strip() or None

    def message_of(self, sha: str) -> str:
        return str(self._repo().commit(sha).message)

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

    def _head(self) -> str | None:
        try:
            return str(self._repo().head.commit.hexsha)
        except ValueError:
            return None  # no commit yet (the brain being created)

    def _unstage(self, paths: list[str]) -> None:
        # Writing the index needs space too: on a full disk this fails, and the next
        # writer tries again (a staged leftover would look like a person's edit).
        try:
            self._repo().git.reset("-q", "HEAD", "--", *paths)
        except Exception as error:
            self._unstage_later.update(paths)
            log.warning("could not unstage %s in the brain after a failed commit (%s);"
                        " the next write does", paths, error)
        else:
            self._unstage_later.difference_update(paths)

    def _repo(self) -> git.Repo:
        gitpython = _gitpython()
        try:
            repo: git.Repo = gitpython.Repo(self.path)
            repo.git.update_environment(**NO_HOOKS, **NO_PROMPTS)
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
                    clear_leftovers(self.path / ".git")
                    if self._unstage_later:
                        self._unstage(sorted(self._unstage_later))
                    if self._remote:
                        self._heed_peers()
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
        """Push HEAD (under the writers' lock, after catching up: a fast-forward), and
        tell the others; False, with the commits kept here, when the remote is away."""
        watch = self._watch
        if watch is None or not self._remote_answering():
            return False
        sha = str(repo.head.commit.hexsha)
        try:
            repo.git.push(self._remote, "HEAD:refs/heads/main",
                          kill_after_timeout=self._remote_timeout_s)
        except _gitpython().GitCommandError as error:
            if any(word in str(error.stderr) for word in REJECTED):
                # It answered, and refused a push that is not a fast-forward: our commits
                # could not be replayed on its newer ones (``_catch_up`` said why, once).
                self._remote_answered()
                return False
            # The commit is safe locally; ``push_pending`` pushes it when the remote answers.
            self._remote_failed("push", self._remote_failure(error))
            return False
        self._remote_answered()
        repo.git.update_ref(REMOTE_SEEN_REF, sha)
        self._unannounced = sha
        self._announce_again()
        return True

    def _announce_again(self) -> None:
        """Tell the others of the last push, if the database has not heard of it yet."""
        sha = self._unannounced
        if sha is None or self._peers is None:
            self._unannounced = None
            return
        try:
            self._peers.announce(sha)
        except Exception as error:  # the database away: the follower's next step retries
            log.warning("the brain's push of %s could not be told to the other replicas"
                        " (%s); told again at the next step", sha[:12], error)
            return
        if self._unannounced == sha:
            self._unannounced = None

    def _remote_failed(self, what: str, why: str) -> None:
        assert self._watch is not None
        said = f"{what} failed: {why}"
        if self._watch.failed(said) and self._peers is not None:
            self._tell_peers(lambda peers: peers.remote_down(said))

    def _remote_answered(self) -> None:
        assert self._watch is not None
        if self._watch.answered() and self._peers is not None:
            self._tell_peers(lambda peers: peers.remote_answers())

    def _heed_peers(self) -> None:
        """Under the writers' lock: skip a remote another replica just found down, rather
        than wait out its timeout again (brain_remote.py)."""
        if self._peers is None or self._watch is None or self._watch.is_down():
            return
        try:
            why = self._peers.remote_found_down()
        except Exception:  # the database answers the lock: a failure here is a blip
            return
        if why is not None:
            self._watch.failed(f"another replica's {why}")

    def _tell_peers(self, tell: Callable[[Peers], None]) -> None:
        assert self._peers is not None
        try:
            tell(self._peers)
        except Exception as error:  # the database away: each replica finds out itself
            log.warning("the other replicas could not be told about the brain remote: %s",
                        error)

    def _remote_failure(self, error: Any) -> str:
        if "Timeout:" in str(error.stderr):  # killed by us: say so, not its command line
            return f"no answer in {self._remote_timeout_s:g} s"
        return _git_detail(error)

    def _shown(self) -> str:
        return self._watch.shown if self._watch is not None else ""


# The team's notes (memory_notes.py), lines appended at its end: two replicas' notes
# replayed on each other keep both (git's union merge), where a line merge would see a
# conflict.
MEMORY_FILE = "persona/MEMORY.md"
UNION_MERGED = (MEMORY_FILE,)


# What git says when the remote refuses a push that is not a fast-forward.
REJECTED = ("[rejected]", "non-fast-forward", "fetch first")

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


def _sha(repo: git.Repo, ref: str) -> str | None:
    try:
        return str(repo.git.rev_parse("--verify", "--quiet", ref)) or None
    except _gitpython().GitCommandError:
        return None


def _identity(commit: git.Commit) -> tuple[str, int, str]:
    """What a rebase keeps of a commit: its author, author date and message."""
    return (str(commit.author.email), int(commit.authored_date), str(commit.message))


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


def _git_detail(error: Any) -> str:
    """The line of git's error that says what went wrong."""
    # GitPython quotes git's output after "stderr: ".
    lines = [line.strip().removeprefix("stderr: '").strip()
             for line in str(error.stderr or "").splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith(("fatal:", "error:"))), None)
    return (detail or (lines[0] if lines else str(error))).strip("'\" ")


def _git_failure(path: Path, error: Any) -> str:
    detail = _git_detail(error)
    hint = ""
    if "index.lock" in str(error.stderr):
        hint = f"; if no other git command is running, delete {path}/.git/index.lock"
    return f"git failed in the brain at {path}: {detail}{hint}"
