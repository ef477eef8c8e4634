"""Every table a Thoth database carries: the layers', then the bridge's and reflection's.

A new owner of tables declares a ``Schema`` in its own ``tables.py`` and is added here.
The Slack transport's tables are declared beside this module (``slack_tables.py``), so
that listing every table never imports the transport.
"""

from __future__ import annotations

from bridge.access.tables import SCHEMA as MCP
from bridge.connections.tables import SCHEMA as CONNECTIONS
from bridge.model.tables import SCHEMA as MODEL_USAGE
from bridge.pipeline.answer_later_tables import SCHEMA as ANSWER_LATER
from bridge.routines.tables import SCHEMA as ROUTINES
from bridge.slack_tables import SCHEMA as SLACK
from bridge.team_tools.tables import SCHEMA as TEAM_TOOLS
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.storage.migrations import Schema
from reflection.tables import SCHEMA as REFLECTION

ALL_SCHEMAS: tuple[Schema, ...] = (
    *LAYER_SCHEMAS, MODEL_USAGE, SLACK, REFLECTION, MCP, TEAM_TOOLS,
    CONNECTIONS, ROUTINES, ANSWER_LATER)
