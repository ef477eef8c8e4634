"""Asking on a card before a team's tool that may change something runs, and taking the
answer on whichever replica Slack delivers the click to.

The turn that wanted the call ends with the ask: the call and its exact arguments are
kept (``tool_asks``), the card is posted in the thread, and the model is told it waits.
The click is taken once (``Asks.take``): only the asker may allow (a founder may deny);
anyone else is told so in a line only they see. Allowed, the call runs then and there,
and the conversation goes on in a turn of its own, the model told what was decided and
what the tool answered (``Conversation.go_on``). Decided: a new turn rather than the old
one resumed, so no half-made model request is kept between replicas: the turn before
and this one are the session's transcript like any two.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge.pipeline.tools.approvals import AskedCall, Decision, NoOneToAsk
from bridge.pipeline.tools.connecting import NoWayToConnect
from bridge.pipeline.turn import Turn
from bridge.routines.making import Proposed
from bridge.slack.answered_call import AnsweredCall
from bridge.slack.connect_links import ConnectLinks
from bridge.slack.routine_cards import RoutineCards
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.escaping import mention
from bridge.slack_api.tool_cards import ALLOW_ALWAYS, answered_card, ask_card
from bridge.team_tools.asks import Ask
from bridge.team_tools.config import tool_name
from bridge.team_tools.team_tools import TeamTools
from layers.identity.protocol import Person
from layers.shared.audit import slack_actor
from layers.shared.errors import BadInput

log = logging.getLogger(__name__)


class ToolAsking:
    """Cards that ask, and the clicks that answer them."""

    def __init__(self, client: AsyncWebClient, team_tools: TeamTools, *,
                 founders: frozenset[str], connect_links: ConnectLinks | None = None) -> None:
        """``connect_links``: the links that connect a person's own account (None
        where no server takes one)."""
        self._client = client
        self._tools = team_tools
        self._founders = founders
        self.connect_links = connect_links

    def in_thread(self, channel: str, thread_root: str) -> SlackApprovals:
        return SlackApprovals(self, channel, thread_root)

    async def post(self, call: AskedCall, turn: Turn, channel: str, thread_root: str,
                   ) -> Decision:
        person = turn.person
        if person is None:
            return Decision(False, f"{call.name} needs a person's yes, and this turn has no"
                                   " speaker to ask: it did not run.", "no one to ask")
        ask = await self._tools.stores.run(lambda stores: stores.asks.ask(
            replace(turn.place, thread_ts=thread_root), turn.session_key, person.user,
            turn.user_name, call.server, call.tool, call.arguments))
        entry = self._tools.config.servers.get(call.server)
        text, blocks = ask_card(ask, as_asker=entry is not None and entry.auth == "oauth")
        try:
            posted = await self._client.chat_postMessage(
                channel=channel, thread_ts=thread_root, text=text, blocks=blocks)
        except SLACK_FAILURES as error:
            log.warning("the card asking for %s could not be posted: %s", call.name, error)
            await self._tools.stores.run(lambda stores: stores.asks.take(
                ask.id, person.user, allowed=False))
            return Decision(False, f"{call.name} needs {turn.user_name or 'the person'}'s"
                                   " yes, and the card asking for it could not be posted: it"
                                   " did not run.", "card not posted")
        card_ts = str(posted.get("ts") or "")
        await self._tools.stores.run(lambda stores: stores.asks.set_card(ask.id, card_ts))
        return Decision(False, (
            f"{call.name} may change something, so a card in this thread now asks"
            f" {turn.user_name or 'the person'} to allow it; it has not run. When they"
            " answer, you will be told what was decided and what it returned. Tell them"
            " briefly what you asked to do and why, then stop."), "asked on a card")

    async def clicked(self, body: dict[str, Any], *, allowed: bool) -> AnsweredCall | None:
        """Take a click on a card: the answered call, or None when the click decides
        nothing (someone else's, answered already, lapsed)."""
        action = (body.get("actions") or [{}])[0]
        ask_id = str(action.get("value") or "")
        user = str((body.get("user") or {}).get("id") or "")
        channel = str((body.get("channel") or {}).get("id")
                      or (body.get("container") or {}).get("channel_id") or "")
        always = allowed and action.get("action_id") == ALLOW_ALWAYS
        taken = await self._tools.stores.run(lambda stores: stores.asks.take(
            ask_id, user, allowed=allowed, founder=user in self._founders))
        ask = taken.ask
        if taken.refused is not None or ask is None:
            await self._refused(taken.refused or "gone", ask, channel, user)
            return None
        name = tool_name(ask.server, ask.tool)
        if not allowed:
            await self._answered(ask, f"{mention(user)} denied it: it did not run.")
            await self._tools.stores.run(lambda stores: stores.audit.record(
                actor=slack_actor(user), action="tool.denied", target=name,
                origin="slack", detail=f"asked by {ask.asker}"))
            return AnsweredCall(ask, f"[denied {name}]", (
                f"{mention(user)} denied {name}: it did not run. Do not ask for it again"
                " unless they ask; say what you can do instead."),
                reader_team=_team_of(body))
        if always:
            await self._tools.grant(ask.place.team, ask.asker, ask.server, ask.tool,
                                    actor=slack_actor(user))
        how = f"allowed by {user} on a card" + (", always" if always else "")
        try:
            answer = await self._tools.run(ask.server, ask.tool, ask.arguments,
                                           actor=slack_actor(user), how=how,
                                           person=Person(ask.place.team, ask.asker))
        except BadInput as failed:
            await self._answered(ask, f"{mention(user)} allowed it; it failed.")
            # Its words quote what the server said already.
            return AnsweredCall(ask, f"[allowed {name}]", (
                f"{mention(user)} allowed {name}, and it failed: {failed}"),
                reader_team=_team_of(body))
        await self._answered(ask, f"{mention(user)} allowed it"
                                  f"{' from now on' if always else ' once'}: it ran.")
        images = len(answer.attachments)
        return AnsweredCall(ask, f"[allowed {name}]", (
            f"{mention(user)} allowed {name}, and it ran. It answered:\n{answer.for_model}"
            + (f"\n[and {images} image(s), not shown in this turn]" if images else "")),
            reader_team=_team_of(body))

    async def _answered(self, ask: Ask, verdict: str) -> None:
        if not ask.card_ts:
            return
        text, blocks = answered_card(ask, verdict)
        try:
            await self._client.chat_update(channel=ask.place.channel, ts=ask.card_ts,
                                           text=text, blocks=blocks)
        except SLACK_FAILURES as error:
            log.warning("the card of ask %s could not be updated: %s", ask.id, error)

    async def _refused(self, why: str, ask: Ask | None, channel: str, user: str) -> None:
        if why == "expired" and ask is not None:
            await self._answered(ask, "No one answered in 30 minutes: it did not run.")
        said = {
            "not yours": (f"Only {mention(ask.asker)} can allow this call: it is their"
                          " conversation's." if ask is not None else "This is not yours."),
            "decided": "This call was answered already.",
            "expired": "This call lapsed unanswered after 30 minutes: ask again.",
        }.get(why, "This call is no longer waiting.")
        try:
            await self._client.chat_postEphemeral(channel=channel, user=user, text=said)
        except SLACK_FAILURES as error:
            log.warning("could not tell %s why their click did nothing: %s", user, error)


class SlackApprovals:
    """A turn's ``Approvals`` (and ``Connecting``, ``RoutineAsking``) in one Slack thread;
    ``asking`` None without team tools, ``routines`` None where no routine is made."""

    def __init__(self, asking: ToolAsking | None, channel: str, thread_root: str,
                 routines: RoutineCards | None = None) -> None:
        self._asking = asking
        self._channel = channel
        self._thread_root = thread_root
        self._routines = routines

    async def ask(self, call: AskedCall, turn: Turn) -> Decision:
        if self._asking is None:
            return await NoOneToAsk().ask(call, turn)
        return await self._asking.post(call, turn, self._channel, self._thread_root)

    async def connect(self, server: str, turn: Turn) -> Decision:
        links = None if self._asking is None else self._asking.connect_links
        if links is None:
            return await NoWayToConnect().connect(server, turn)
        return await links.send(server, turn, self._channel, self._thread_root)

    async def propose(self, proposed: Proposed, turn: Turn) -> str:
        if self._routines is None:
            return "Routines cannot be made here: it was not made."
        return await self._routines.post(proposed, turn, self._channel, self._thread_root)


def _team_of(body: dict[str, Any]) -> str | None:
    user = body.get("user") or {}
    return str(user.get("team_id") or (body.get("team") or {}).get("id") or "") or None
