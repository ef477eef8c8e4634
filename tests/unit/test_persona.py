"""The persona stack: order, reload on change, size budget, brain over shipped files."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from layers.procedural.persona import MAX_FILE_CHARS, PERSONA_FILES, PersonaLoader
from layers.procedural.shipped import SHIPPED_PERSONA


def test_the_shipped_persona_has_all_seven_files_in_order() -> None:
    persona = PersonaLoader((SHIPPED_PERSONA,)).load()
    assert [f.name for f in persona.files] == list(PERSONA_FILES)
    rendered = persona.render()
    positions = [rendered.index(f'name="{name}"') for name in PERSONA_FILES]
    assert positions == sorted(positions)
    assert "You are Thoth" in persona.file("IDENTITY.md")


def test_an_edited_file_is_picked_up_without_a_restart(tmp_path: Path) -> None:
    (tmp_path / "SOUL.md").write_text("Be kind.")
    loader = PersonaLoader((tmp_path,))
    assert loader.load().file("SOUL.md") == "Be kind."
    soul = tmp_path / "SOUL.md"
    soul.write_text("Be brief and kind.")
    # Same second on coarse file systems: move the mtime so the change is visible.
    stat = soul.stat()
    os.utime(soul, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert loader.load().file("SOUL.md") == "Be brief and kind."


def test_an_oversized_file_is_cut_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "MEMORY.md").write_text("note\n" * MAX_FILE_CHARS)
    with caplog.at_level(logging.WARNING):
        persona = PersonaLoader((tmp_path,)).load()
    (memory,) = persona.files
    assert memory.truncated and len(memory.text) == MAX_FILE_CHARS
    assert "MEMORY.md" in caplog.text


def test_the_first_existing_directory_wins(tmp_path: Path) -> None:
    brain = tmp_path / "brain"
    loader = PersonaLoader((brain, SHIPPED_PERSONA))
    assert loader.directory() == SHIPPED_PERSONA
    brain.mkdir()
    (brain / "IDENTITY.md").write_text("You are Thoth for the Acme team.")
    assert loader.load().file("IDENTITY.md") == "You are Thoth for the Acme team."
