"""The memory layers' tables, each declared by its layer (``layers/*/schema.py``)."""

from __future__ import annotations

from layers.episodic.schema import SCHEMA as EPISODIC
from layers.identity.schema import SCHEMA as IDENTITY
from layers.notes.schema import SCHEMA as NOTES
from layers.procedural.schema import SCHEMA as PROCEDURAL
from layers.storage.migrations import Schema
from layers.storage.schema import SCHEMA as STORAGE
from layers.working.schema import SCHEMA as WORKING

LAYER_SCHEMAS: tuple[Schema, ...] = (STORAGE, WORKING, EPISODIC, PROCEDURAL, IDENTITY, NOTES)
