"""Every table a Thoth database carries: the layers', then the bridge's and reflection's.

A new owner of tables declares a ``Schema`` in its own ``schema.py`` and is added here.
"""

from __future__ import annotations

from bridge.model.schema import SCHEMA as MODEL_USAGE
from bridge.slack.schema import SCHEMA as SLACK
from layers.schemas import LAYER_SCHEMAS
from layers.storage.migrations import Schema
from reflection.schema import SCHEMA as REFLECTION

ALL_SCHEMAS: tuple[Schema, ...] = (*LAYER_SCHEMAS, MODEL_USAGE, SLACK, REFLECTION)
