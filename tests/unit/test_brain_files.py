"""The brain's files replaced as a set (``brain_files.FileSet``): each one atomically,
all put back by renames. Real files in a temporary folder."""

from __future__ import annotations

import threading
from pathlib import Path

from layers.procedural.brain_files import SCRATCH, FileSet, clear_leftovers


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.parts}


def _folders(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_dir() and ".git" not in p.parts)


def test_a_change_put_back_leaves_every_file_and_folder_as_it_was(tmp_path: Path) -> None:
    root = tmp_path / "brain"
    (root / ".git").mkdir(parents=True)
    (root / "persona").mkdir()
    (root / "persona" / "MEMORY.md").write_text("# Memory\n- kept by hand, not committed\n")
    (root / "skills" / "old").mkdir(parents=True)
    (root / "skills" / "old" / "SKILL.md").write_text("old skill")
    (root / "skills" / "old" / "SKILL.md").chmod(0o640)
    before, folders = _tree(root), _folders(root)

    files = FileSet(root, root / ".git")
    files.write("persona/MEMORY.md", "# Memory\n- new\n")
    files.write("skills/new/deep/SKILL.md", "new skill")
    files.write("skills/old/SKILL.md", None)
    assert _tree(root) == {"persona/MEMORY.md": "# Memory\n- new\n",
                           "skills/new/deep/SKILL.md": "new skill"}
    files.put_back()
    assert _tree(root) == before  # the uncommitted hand edit too
    assert _folders(root) == folders  # made folders gone, emptied ones back
    assert (root / "skills" / "old" / "SKILL.md").stat().st_mode & 0o777 == 0o640
    assert not list((root / ".git" / SCRATCH).iterdir())


def test_a_kept_change_keeps_the_modes_and_leaves_nothing_aside(tmp_path: Path) -> None:
    root = tmp_path / "brain"
    (root / ".git").mkdir(parents=True)
    (root / "run.sh").write_text("echo old\n")
    (root / "run.sh").chmod(0o750)
    files = FileSet(root, root / ".git")
    files.write("run.sh", "echo new\n")
    files.keep()
    assert (root / "run.sh").read_text() == "echo new\n"
    assert (root / "run.sh").stat().st_mode & 0o777 == 0o750
    assert not list((root / ".git" / SCRATCH).iterdir())


def test_a_reader_never_sees_a_file_cut_short(tmp_path: Path) -> None:
    """The persona is read while it is written (another thread's turn): every read is
    one whole version, never an empty or half-written file."""
    root = tmp_path / "brain"
    (root / ".git").mkdir(parents=True)
    versions = [f"# Memory\n{str(n) * 400_000}\n" for n in range(6)]
    (root / "MEMORY.md").write_text(versions[0])
    seen: set[int] = set()
    torn: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            text = (root / "MEMORY.md").read_text()
            if text in versions:
                seen.add(versions.index(text))
            else:
                torn.append(len(text))

    reader = threading.Thread(target=read)
    reader.start()
    for version in versions[1:] * 5:
        files = FileSet(root, root / ".git")
        files.write("MEMORY.md", version)
        files.keep()
    done.set()
    reader.join()
    assert not torn
    assert len(seen) > 1  # the reader did read while the file changed


def test_what_a_killed_writer_left_aside_is_cleared(tmp_path: Path) -> None:
    git_dir = tmp_path / ".git"
    (git_dir / SCRATCH).mkdir(parents=True)
    (git_dir / SCRATCH / "new-abc").write_text("half")
    clear_leftovers(git_dir)
    assert not list((git_dir / SCRATCH).iterdir())
