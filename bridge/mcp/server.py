"""The MCP server for one asker: the tools this surface offers of the one list
(``bridge/pipeline/tools/offered.py``: recall, what Thoth knows about them, the team's
skills) and its own two (``proposals.py``: a memory note, a skill), served as they are
defined (``tool_server.py``), and the persona's and skills' resources.

Who asks is found at each call (``AskerOf``): over stdio the one person the operator
named; over HTTP the holder of the request's token (``http.py``). A shared tool reads as
that person in their DM with Thoth (``Asker.viewer``), under every key they are known by.

The memory is opened beside the handshake (``opening.py``), and what the tools are made
of once it is open (``_served``).

Blocking work runs on worker threads (``Offloaded``, ``anyio.to_thread``): recall embeds
the query and reads the database, which the server's event loop must not wait on.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from mcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from bridge.mcp.opening import Opening
from bridge.mcp.resources import add_resources
from bridge.mcp.tool_server import AskerOf, Served, ToolServer

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from bridge.app import Thoth
    from bridge.mcp.asker import Asker

# How many episodes a recall that names no k reads over MCP.
RECALL_K = 5
# The version a source tree that was never installed says it is (PEP 440, so a client
# that parses versions reads it): not a release.
UNINSTALLED_VERSION = "0+unknown"


def thoth_version() -> str:
    """The installed package's version, as the initialize handshake tells a client."""
    try:
        return version("thoth")
    except PackageNotFoundError:
        return UNINSTALLED_VERSION


def the_one(asker: Asker) -> AskerOf:
    """Stdio's asker: the same person at every call."""
    async def same() -> Asker:
        return asker

    return same


def mcp_server(app: Opening[Thoth], asker: AskerOf, *, origin: str,
               token_verifier: TokenVerifier | None = None,
               auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None,
               auth: AuthSettings | None = None) -> MCPServer:
    """The server: every tool reads as the asker of the call may read; ``origin`` is how
    the audit log names the way in."""
    server = ToolServer(
        app.then(lambda opened: _served(opened, origin)), asker, origin=origin,
        version=thoth_version(),
        token_verifier=token_verifier,
        auth_server_provider=auth_server_provider,
        auth=auth,
        instructions=(
            "Thoth is a team's memory from Slack: what was said and decided, what it "
            "knows about the person asking, and the team's skills (procedures). Recall "
            "before asking the person something the team may already have settled."
        ),
    )
    add_resources(server, app, server.read_audited)
    return server


def _served(app: Thoth, origin: str) -> Served:
    """The tools of the open memory, and its audit log."""
    # Imported here, on the thread that opens the memory: they load the memory's layers
    # and Slack's clients, which the handshake does not wait for.
    from bridge.console_links import console_links
    from bridge.mcp.asker import caller_of
    from bridge.mcp.cards import Cards
    from bridge.mcp.note_places import NotePlaces
    from bridge.mcp.proposals import propose_skill, remember
    from bridge.pipeline.tools.offered import ToolDependencies, tools_for
    from bridge.slack_api.notifier import SlackNotifier
    from layers.shared.offloaded import Offloaded

    settings = app.settings
    # Slack vouches for a note's channel and shows the cards, where the bot token is set
    # (installed into many workspaces: with the token of the asker's workspace).
    slack_of = _slack_of(app)
    links = console_links(settings.console_url)

    def notifier_of(team: str) -> SlackNotifier | None:
        slack = slack_of(team)
        return None if slack is None else SlackNotifier(
            slack, app.db, links, team=None if settings.slack_bot_token else team)

    places = NotePlaces(slack_of)
    cards = Cards(notifier_of, settings.founder_user_ids)
    shared = tools_for("mcp", ToolDependencies(Offloaded(app.skills), RECALL_K,
                                    episodic=Offloaded(app.episodic), identity=app.identity))
    tools = [*(tool.asked_by(lambda asker: caller_of(asker, origin)) for tool in shared),
             remember(app.notes, places, cards), propose_skill(app.drafts, cards)]
    return Served({tool.name: tool for tool in tools}, Offloaded(app.audit))


def _slack_of(app: Thoth) -> Callable[[str], WebClient | None]:
    """The bot's sync client for a workspace: the bot token's, or, installed into many
    workspaces, the client of that workspace's install (None: not installed there)."""
    # The installs are opened now: SLACK_TOKEN_KEYS that cannot be read fails the opening
    # with its one line, not every later call. (They load no Bolt: `thoth mcp` starts
    # without it.)
    app.slack.installations  # noqa: B018
    return app.slack.sync_client
