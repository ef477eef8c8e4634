"""The MCP server's tools, for one asker: recall, what Thoth knows about them, a memory
note proposed (``remember``), and the team's skills. Each call is written to the audit
log; bad input is the protocol's tool error with one line, and changes nothing.

Who asks is found at each call (``AskerOf``): over stdio the one person the operator
named; over HTTP the holder of the request's token (``http.py``).

Tools run on worker threads (``anyio.to_thread``): recall embeds the query and reads
the database, which the server's event loop must not wait on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from bridge.app import Thoth
from bridge.console_links import console_links
from bridge.mcp.asker import Asker
from bridge.mcp.cards import Cards
from bridge.mcp.note_places import DM, NotePlaces
from bridge.mcp.resources import add_resources, no_skill, skill_md
from bridge.pipeline.episodes_block import where_said
from bridge.slack_api.notifier import SlackNotifier
from layers.episodic.episode import Hit
from layers.errors import BadInput
from layers.identity.known_as import facts_of, known_as

if TYPE_CHECKING:
    from slack_sdk import WebClient

# As many as a Slack turn's recall reads at most: a client asking for more gets this.
MAX_RESULTS = 20
# The tools that change what Thoth keeps; every other call only reads.
CHANGES = frozenset({"remember", "propose_skill"})

AskerOf = Callable[[], Awaitable[Asker]]


def the_one(asker: Asker) -> AskerOf:
    """Stdio's asker: the same person at every call."""
    async def same() -> Asker:
        return asker

    return same


def _slack_of(app: Thoth) -> Callable[[str], WebClient | None]:
    """The bot's sync client for a workspace: the bot token's, or, installed into many
    workspaces, the client of that workspace's install (None: not installed there)."""
    return app.slack.sync_client


def mcp_server(app: Thoth, asker: AskerOf, *, origin: str,
               token_verifier: TokenVerifier | None = None,
               auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None,
               auth: AuthSettings | None = None) -> MCPServer:
    """The server: every tool reads as the asker of the call may read; ``origin`` is how
    the audit log names the way in."""
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
    server = MCPServer(
        name="thoth",
        token_verifier=token_verifier,
        auth_server_provider=auth_server_provider,
        auth=auth,
        instructions=(
            "Thoth is a team's memory from Slack: what was said and decided, what it "
            "knows about the person asking, and the team's skills (procedures). Recall "
            "before asking the person something the team may already have settled."
        ),
    )
    tools = AskersTools(app, asker, places, cards, origin)
    server.tool(description=(
        "Search the team's memory (Slack conversations Thoth took part in) for what is"
        " relevant to the query, as the person asking may read it: their own DMs with"
        " Thoth, the public channels of their workspace and (over HTTP) the private"
        " channels they are in. Each result says who said it, when and where."
        ))(tools.recall)
    server.tool(description=(
        "What Thoth's identity memory holds about the person asking (facts learned in"
        " conversation, with ids). Only ever about themselves."))(tools.what_do_you_know_about_me)
    server.tool(description=(
        "Propose a memory note: one line the team should keep in mind (a decision, who"
        " owns what, how something is done). It waits for a founder's approval, as a note"
        " proposed in Slack does, then Thoth keeps it where it was proposed. where: 'dm'"
        " (your DM with Thoth: only you), a public channel's id (everyone in the"
        " workspace), or over HTTP a private channel's id you are in (its members)."
        ))(tools.remember)
    server.tool(description=(
        "Propose a skill: a procedure the team should follow (name: lowercase words joined"
        " by hyphens; description: what it is for, in a sentence; instructions: the steps,"
        " in Markdown). It becomes a draft the founders approve or reject in Slack; a name"
        " the team already has proposes its next version."))(tools.propose_skill)
    server.tool(description=(
        "The team's skills: procedures Thoth follows, each with its name and what it is"
        " for. Read one with get_skill."))(tools.list_skills)
    server.tool(description=(
        "One skill of the team's, whole: its SKILL.md (front matter and instructions),"
        " to follow as the team does."))(tools.get_skill)
    add_resources(server, app, tools.read_audited)
    return server


class AskersTools:
    """The tools, each reading as its call's asker may."""

    def __init__(self, app: Thoth, asker_of: AskerOf, places: NotePlaces, cards: Cards,
                 origin: str) -> None:
        self._app = app
        self._asker_of = asker_of
        self._places = places
        self._cards = cards
        self._origin = origin

    def _audited(self, asker: Asker, action: str, target: str, detail: str = "") -> None:
        # A read's line is committed without waiting for the disk (Database.write): an
        # fsync was about 0.9 of recall's 6.9 ms over HTTP. What a call changes (a note,
        # a skill draft) is written, and audited, as every change is.
        self._app.audit.record(actor=asker.actor, action=f"mcp.{action}",
                               target=target, origin=self._origin, detail=detail,
                               durable=action in CHANGES)

    async def read_audited(self, kind: str, name: str) -> None:
        """A resource read, in the audit log as a tool call is."""
        asker = await self._asker_of()
        await anyio.to_thread.run_sync(lambda: self._audited(asker, f"read_{kind}", name))

    async def recall(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        if not 1 <= k <= MAX_RESULTS:
            raise ToolError(f"k is a number from 1 to {MAX_RESULTS}")
        asker = await self._asker_of()

        def search() -> list[Hit]:
            try:
                hits = self._app.episodic.recall(query, asker.viewer, k=k)
            except BadInput as error:
                raise ToolError(str(error)) from error
            self._audited(asker, "recall", query, f"{len(hits)} results")
            return hits

        return [_result(hit) for hit in await anyio.to_thread.run_sync(search)]

    async def what_do_you_know_about_me(self) -> list[dict[str, Any]]:
        identity = self._app.identity
        if identity is None:
            raise ToolError("identity memory is off here (HONCHO_DISABLED): nothing is"
                            " kept about anyone")
        asker = await self._asker_of()
        person = asker.person
        facts = await facts_of(identity, known_as(person, asker.memberships.org),
                               asker.viewer)
        await anyio.to_thread.run_sync(
            lambda: self._audited(asker, "about_me", person.key, f"{len(facts)} facts"))
        return [{"id": fact.id, "fact": fact.text, "learned": _when(fact.at)}
                for fact in facts]

    async def remember(self, text: str, where: str = DM) -> dict[str, str]:
        asker = await self._asker_of()

        def propose() -> dict[str, str]:
            try:
                place = self._places.place(asker, where)
                note = self._app.notes.propose(
                    text, place, user=asker.user, author_name=self._places.name_of(asker),
                    source="MCP",
                    session_id=None, speakers=[asker.user])
            except BadInput as error:
                raise ToolError(str(error)) from error
            self._audited(asker, "remember", f"note:{note.id}", note.status)
            if note.status == "proposed":
                self._cards.note_card(note, asker)
            waiting = note.status == "proposed"
            return {"id": note.id, "text": note.text, "where": _place_said(place.channel_type,
                                                                           place.channel),
                    "status": "waiting for a founder's approval" if waiting else note.status}

        return await anyio.to_thread.run_sync(propose)

    async def propose_skill(self, name: str, description: str,
                            instructions: str) -> dict[str, Any]:
        asker = await self._asker_of()

        def propose() -> dict[str, Any]:
            try:
                draft = self._app.drafts.propose(name, description, instructions,
                                                 proposed_by=asker.actor)
            except BadInput as error:
                raise ToolError(str(error)) from error
            self._audited(asker, "propose_skill", f"draft:{draft.id}",
                          f"{draft.slug} {draft.version}")
            return {"id": draft.id, "name": draft.slug, "version": draft.version,
                    "status": "waiting for a founder's approval",
                    "cards_in_slack": self._cards.skill_card(draft, asker)}

        return await anyio.to_thread.run_sync(propose)

    async def list_skills(self) -> list[dict[str, str]]:
        asker = await self._asker_of()

        def listed() -> list[dict[str, str]]:
            skills = self._app.skills.skills()
            self._audited(asker, "list_skills", "skills", f"{len(skills)} skills")
            return [{"name": slug, "description": skill.description}
                    for slug, skill in sorted(skills.items())]

        return await anyio.to_thread.run_sync(listed)

    async def get_skill(self, name: str) -> str:
        asker = await self._asker_of()

        def read() -> str:
            text = skill_md(self._app, name)
            if text is None:
                raise ToolError(no_skill(name))
            self._audited(asker, "get_skill", name)
            return text

        return await anyio.to_thread.run_sync(read)


def _place_said(channel_type: str, channel: str) -> str:
    # The asker's only DMs they may read or write are their own with Thoth: say so.
    return "a DM with Thoth" if channel_type == "im" else where_said(channel_type, channel)


def _result(hit: Hit) -> dict[str, Any]:
    episode = hit.episode
    place = _place_said(episode.channel_type, episode.channel)
    return {
        "id": episode.id,
        "said_by": episode.user_name or episode.user,
        "when": _when(episode.created_at),
        "where": place,
        "thread": episode.thread_ts,
        "text": episode.user_text,
        "reply_summary": episode.summary,
        "score": round(hit.score, 4),
    }


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")
