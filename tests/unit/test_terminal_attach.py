"""`/attach PATH` in `thoth chat`: which lines attach, what a path may be, and the cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.files.reading import MB, Limits, Read, Unread
from bridge.terminal.attach import attach_path, attached_line, check_room, local_file
from layers.shared.errors import BadInput


def test_an_attach_line_names_its_path_and_other_lines_are_not_one() -> None:
    assert attach_path("/attach  notes/my spec.pdf ") == "notes/my spec.pdf"
    assert attach_path("/attach") == ""
    assert attach_path("/attachment x") is None
    assert attach_path("please /attach x") is None


def test_a_path_dropped_in_quoted_or_escaped_is_read_as_a_shell_reads_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "my notes.txt").write_text("The deploy freeze starts Friday.")
    for typed in (f"'{tmp_path}/my notes.txt'", f"{tmp_path}/my\\ notes.txt",
                  f"{tmp_path}/my notes.txt"):
        file = local_file(typed, Limits())
        assert isinstance(file, Read) and file.text == "The deploy freeze starts Friday."
        assert attached_line(file) == "attached my notes.txt" and file.permalink is None


def test_a_file_over_the_cap_is_refused_by_its_size_in_one_line(tmp_path: Path) -> None:
    big = tmp_path / "huge.log"
    big.write_bytes(b"x" * (2 * MB + 1))
    file = local_file(str(big), Limits(max_bytes=MB))
    assert isinstance(file, Unread) and file.size == 2 * MB + 1
    assert attached_line(file) == ("I could not read huge.log: it is 2.0 MB, over the 1 MB"
                                   " files may be.")


def test_no_path_a_missing_one_a_directory_and_a_ninth_file_are_one_line_each(
    tmp_path: Path,
) -> None:
    for typed, said in (("", "/attach needs a path: /attach PATH"),
                        ("gone.txt", "cannot attach gone.txt: there is no such file"),
                        (str(tmp_path),
                         f"cannot attach {tmp_path}: it is a directory, not a file")):
        with pytest.raises(BadInput) as refused:
            local_file(typed, Limits())
        assert str(refused.value) == said
    check_room(7)
    with pytest.raises(BadInput, match="at most 8 files"):
        check_room(8)
