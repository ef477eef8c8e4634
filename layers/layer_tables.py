"""The memory layers' tables, each declared by its layer (``layers/*/tables.py``)."""

from __future__ import annotations

from layers.episodic.tables import SCHEMA as EPISODIC
from layers.identity.tables import SCHEMA as IDENTITY
from layers.notes.tables import SCHEMA as NOTES
from layers.procedural.tables import SCHEMA as PROCEDURAL
from layers.shared.audit.tables import SCHEMA as AUDIT
from layers.shared.storage.migrations import Schema
from layers.shared.storage.tables import SCHEMA as STORAGE
from layers.working.tables import SCHEMA as WORKING

LAYER_SCHEMAS: tuple[Schema, ...] = (
    STORAGE, WORKING, EPISODIC, PROCEDURAL, IDENTITY, NOTES, AUDIT)
