"""The persona and skills Thoth ships with, as package data.

``persona`` and ``skills`` here are links to the repository's top-level ``persona/`` and
``skills/`` (where people edit them): a wheel holds the files themselves, so a plain
``pip install .`` has them, and ``importlib.resources`` finds them either way.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

# A package installed from a wheel or a checkout is on disk: its files are paths.
SHIPPED = Path(str(files(__name__)))
SHIPPED_PERSONA = SHIPPED / "persona"
SHIPPED_SKILLS = SHIPPED / "skills"
