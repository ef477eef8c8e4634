"""A brain bundle is taken only as a fast-forward of plain files with no secret in any
commit it brings; a refused one leaves nothing in the brain, not even its objects."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from layers.procedural.brain import Brain
from layers.procedural.shipped import SHIPPED_PERSONA, SHIPPED_SKILLS
from layers.shared.errors import BadInput

SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture
def brain(tmp_path: Path) -> Brain:
    made = Brain(tmp_path / "brain")
    made.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
    return made


def _grown(brain: Brain, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(brain.path), str(where)], check=True)
    return where


def _commit(repo: Path, message: str = "grown elsewhere") -> None:
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)


def _bundle(repo: Path) -> Path:
    bundle = repo.parent / f"{repo.name}.bundle"
    subprocess.run(["git", "-C", str(repo), "bundle", "create", "-q", str(bundle), "main"],
                   check=True)
    return bundle


def _objects(brain: Brain) -> set[str]:
    listed = subprocess.run(["git", "-C", str(brain.path), "cat-file", "--batch-all-objects",
                             "--batch-check=%(objectname)"], capture_output=True, text=True,
                            check=True)
    return set(listed.stdout.split())


def test_a_bundle_that_continues_the_brain_is_taken_and_one_that_does_not_is_refused(
    brain: Brain, tmp_path: Path,
) -> None:
    grown = _grown(brain, tmp_path / "grown")
    (grown / "persona" / "EXTRA.md").write_text("Answer in British English.\n")
    _commit(grown)
    bundle = _bundle(grown)
    sha = brain.fast_forward_to_bundle(bundle)
    assert sha is not None and (brain.path / "persona" / "EXTRA.md").exists()
    assert brain.fast_forward_to_bundle(bundle) is None  # nothing new the second time
    not_a_bundle = tmp_path / "junk.bundle"
    not_a_bundle.write_bytes(b"not a bundle")
    with pytest.raises(BadInput, match="not a git bundle"):
        brain.fast_forward_to_bundle(not_a_bundle)


@pytest.mark.parametrize("case", ["secret-in-a-middle-commit", "quoted-name", "symlink",
                                  "secret-in-message"])
def test_what_a_commit_here_could_not_hold_is_refused_and_leaves_nothing(
    brain: Brain, tmp_path: Path, case: str,
) -> None:
    grown = _grown(brain, tmp_path / "grown")
    if case == "secret-in-a-middle-commit":
        (grown / "persona" / "EXTRA.md").write_text(f"token {SECRET}\n")
        _commit(grown)
        (grown / "persona" / "EXTRA.md").write_text("nothing to see\n")
        _commit(grown)
    elif case == "quoted-name":  # git quotes this name unless asked for NUL-separated paths
        (grown / "persona" / "café\tnotes.md").write_text(f"token {SECRET}\n")
        _commit(grown)
    elif case == "symlink":
        (grown / "persona" / "SOUL.md").unlink()
        os.symlink("/etc/passwd", grown / "persona" / "SOUL.md")
        _commit(grown)
    else:
        (grown / "persona" / "EXTRA.md").write_text("fine\n")
        _commit(grown, f"deploy with {SECRET}")
    bundle = _bundle(grown)
    before, head = _objects(brain), brain.path.joinpath(".git", "HEAD").read_text()
    with pytest.raises(BadInput, match="nothing was imported"):
        brain.fast_forward_to_bundle(bundle)
    assert _objects(brain) == before  # checked in quarantine: the brain took nothing
    assert brain.path.joinpath(".git", "HEAD").read_text() == head
    assert not (brain.path / "persona" / "SOUL.md").is_symlink()
