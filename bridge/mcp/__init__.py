"""Thoth's memory for other agents, over the Model Context Protocol (issue 34).

``server.py`` builds the server's tools for one asker; ``asker.py`` says who that is and
what they may read (the visibility rule every Slack turn follows); ``bridge/cli/mcp.py``
runs it over stdio for a local client the person starts.
"""
