"""Which ways into /mcp a client is offered: a person's own Thoth token always, and signing
in with Slack through OAuth where the console's address and the Slack app's credentials
are set. One rule for MCP's server (``bridge/mcp/http.py``), its startup lines and
`thoth doctor`, which stands a floor below MCP and so reads it here."""

from __future__ import annotations

from bridge.messages import MCP_WAYS_IN_SIGN_IN, MCP_WAYS_IN_TOKENS
from bridge.settings import Settings


def mcp_signs_in(settings: Settings) -> bool:
    """Whether MCP clients may sign in with Slack through OAuth here (``mcp/oauth.py``)."""
    return bool(settings.console_url and settings.slack_client_id
                and settings.slack_client_secret)


def ways_in(settings: Settings) -> str:
    """Which ways in /mcp offers, as the startup lines and `thoth doctor` say it."""
    return MCP_WAYS_IN_SIGN_IN if mcp_signs_in(settings) else MCP_WAYS_IN_TOKENS
