"""Whether a git bundle may be taken into the brain, read in a quarantine repository.

A bundle is taken only when its main continues the brain's history, and when nothing any
of its new commits brings could not have been committed here: every entry a regular
file (a symlink could point a persona file at the host's secrets; a submodule is no
file at all), and no secret in any file any new commit adds — not only the last one,
since history is kept — nor in a commit's message. Paths are read NUL-separated (``-z``),
so no name is ever quoted past the check.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from layers.shared.errors import BadInput
from layers.shared.redaction import redact

# Regular files, plain and executable: the only entries a brain commit writes.
FILE_MODES = ("100644", "100755")
GIT_TIMEOUT_S = 120


def checked_bundle(bundle: Path, brain: Path) -> bool:
    """True when the bundle brings commits the brain lacks and may take them; False when
    it brings nothing new. ``BadInput`` (saying why) for anything else."""
    with tempfile.TemporaryDirectory(prefix="thoth-bundle-") as scratch:
        quarantine = Path(scratch)
        _git(quarantine, "init", "--quiet", "--bare")
        _git(quarantine, "fetch", "--quiet", "--no-tags", str(brain), "+HEAD:refs/ours")
        try:
            _git(quarantine, "fetch", "--quiet", "--no-tags", str(bundle),
                 "+refs/heads/main:refs/theirs")
        except subprocess.CalledProcessError as error:
            raise BadInput("that is not a git bundle of a brain with a main branch") from error
        if _is_ancestor(quarantine, "refs/theirs", "refs/ours"):
            return False
        if not _is_ancestor(quarantine, "refs/ours", "refs/theirs"):
            raise BadInput("the bundle's history does not continue this brain's: nothing was"
                           " imported (export the brain, then import what grew from that"
                           " export)")
        for commit in _git(quarantine, "rev-list", "refs/ours..refs/theirs").split():
            _check_commit(quarantine, commit)
    return True


def _check_commit(repo: Path, commit: str) -> None:
    message = _git(repo, "log", "-1", "--format=%an%n%ae%n%B", commit)
    if redact(message) != message:
        raise BadInput(f"commit {commit[:12]} in the bundle names a secret: nothing was"
                       " imported")
    # -m: a merge's changes against each parent; -z: raw records and paths NUL-separated.
    raw = _git(repo, "diff-tree", "-r", "-z", "-m", "--no-renames", "--root",
               "--no-commit-id", commit)
    fields = raw.split("\0")
    for header, path in zip(fields[0::2], fields[1::2], strict=False):
        if not header.startswith(":"):
            continue
        _, new_mode, _, new_sha, status = header[1:].split(" ")
        if status == "D":
            continue
        if new_mode not in FILE_MODES:
            raise BadInput(f"{path} in the bundle is not a plain file (a symlink or a"
                           " submodule): nothing was imported")
        text = _git(repo, "cat-file", "blob", new_sha)
        if redact(text) != text:
            raise BadInput(f"{path} in the bundle holds a secret: nothing was imported")


def _is_ancestor(repo: Path, older: str, newer: str) -> bool:
    done = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", older, newer],
                          capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    return done.returncode == 0


def _git(repo: Path, *arguments: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *arguments], capture_output=True,
                          timeout=GIT_TIMEOUT_S, check=True)
    return done.stdout.decode("utf-8", "replace")
