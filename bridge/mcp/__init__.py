"""Thoth's memory for other agents, over the Model Context Protocol (issue 34).

``server.py`` builds the server for one asker: the tools a turn's model has too, each
defined once in ``bridge/pipeline/tools/`` and served by ``tool_server.py``, and MCP's own
proposals (``proposals.py``); ``asker.py`` says who asks and what they may read (the
visibility rule every Slack turn follows); ``bridge/cli/mcp.py`` runs it over stdio for a
local client the person starts, ``http.py`` over streamable HTTP for a team.
"""
