"""Sending a person the link that connects their own account on a remote server, and
going on with the conversation once they have.

The turn that wanted the server ends with the ask: it is kept (``tool_asks``, its tool
``(connect)``) and a message only the person sees is posted in the thread, its button
opening the console's sign-in for that server with the ask named. The console takes the
browser's return and marks the ask answered (``bridge/console/routes/connections.py``);
every Slack process looks for such asks every ``LOOK_EVERY_S`` seconds, and the first to
claim one goes on in a turn of its own (``Conversation.go_on``), the model told that the
server's tools now act as that person. Decided: looked for rather than told, since the
console may be another process (`thoth console` beside Socket Mode) than any that holds
the conversation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from urllib.parse import quote

from slack_sdk.web.async_client import AsyncWebClient

from bridge.console_links import ConsoleLinks
from bridge.pipeline.tools.approvals import Decision
from bridge.pipeline.turn import Turn
from bridge.slack.answered_call import AnsweredCall
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.escaping import escape, mention
from bridge.team_tools.asks import CONNECT_ASK, Ask
from bridge.team_tools.team_tools import TeamTools

log = logging.getLogger(__name__)

LOOK_EVERY_S = 2.0
CONNECT_BUTTON = "connect_server"


class ConnectLinks:
    def __init__(self, client: AsyncWebClient, team_tools: TeamTools,
                 console: ConsoleLinks) -> None:
        self._client = client
        self._tools = team_tools
        self._console = console
        self._going_on: set[asyncio.Task[None]] = set()

    def link(self, server: str, ask_id: str) -> str:
        return (f"{self._console.home}/connections/start/{quote(server, safe='')}"
                f"?ask={quote(ask_id, safe='')}")

    async def send(self, server: str, turn: Turn, channel: str, thread_root: str,
                   ) -> Decision:
        person = turn.person
        if person is None or person.user is None:
            return Decision(False, f"{server} acts as the person who asks, and this turn has"
                                   " no speaker: it cannot be used.", "no one to connect")
        user = person.user
        ask = await self._tools.stores.run(lambda stores: stores.asks.ask(
            replace(turn.place, thread_ts=thread_root), turn.session_key, user,
            turn.user_name, server, CONNECT_ASK, {}))
        text = (f"{escape(server)} acts as you, with your own account: connect it to let"
                " Thoth use it for you. Only you see this.")
        try:
            await self._client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread_root, text=text, blocks=[
                    {"type": "section", "text": {"type": "mrkdwn", "text": text}},
                    {"type": "actions", "elements": [{
                        "type": "button", "action_id": CONNECT_BUTTON, "value": ask.id,
                        "style": "primary", "url": self.link(server, ask.id),
                        "text": {"type": "plain_text", "text": f"Connect {server}"}}]},
                    {"type": "context", "elements": [{"type": "mrkdwn", "text": (
                        "You sign in on the server's own page; Thoth keeps your token"
                        " sealed and uses it only for you. `/thoth disconnect"
                        f" {escape(server)}` ends it.")}]}])
        except SLACK_FAILURES as error:
            log.warning("the link to connect %s could not be sent: %s", server, error)
            await self._tools.stores.run(lambda stores: stores.asks.take(
                ask.id, user, allowed=False))
            return Decision(False, f"{server} needs {turn.user_name or 'the person'}'s own"
                                   " account, and the link to connect it could not be sent.",
                            "link not sent")
        return Decision(False, (
            f"{server} acts as each person with their own account, and"
            f" {turn.user_name or 'this person'} has not connected theirs: a link to connect"
            " it was sent to them in this thread (only they see it). When they have"
            f" connected, you will be told, and {server}'s tools will be offered to you."
            " Tell them briefly, then stop."), "asked to connect")

    async def keep_going_on(self, go_on: Callable[[AnsweredCall], Awaitable[None]]) -> None:
        """Forever: go on with each conversation whose person connected (claimed once,
        across every replica)."""
        while True:
            await asyncio.sleep(LOOK_EVERY_S)
            try:
                connected = await self._tools.stores.run(lambda stores: stores.asks.connected())
            except Exception:
                log.exception("looking for connected accounts failed")
                continue
            for ask in connected:
                # Each in a task of its own: one long turn does not hold the others back.
                going = asyncio.get_running_loop().create_task(self._go_on(go_on, ask))
                self._going_on.add(going)
                going.add_done_callback(self._going_on.discard)

    async def _go_on(self, go_on: Callable[[AnsweredCall], Awaitable[None]], ask: Ask) -> None:
        try:
            await go_on(went_on(ask))
        except Exception:
            log.exception("the conversation after %s connected %s failed", ask.asker,
                          ask.server)


def went_on(ask: Ask) -> AnsweredCall:
    return AnsweredCall(ask, f"[connected {ask.server}]", (
        f"{mention(ask.asker)} connected their own {ask.server} account: {ask.server}'s"
        " tools are offered to you now, and act as them. Go on with what they asked."),
        reader_team=ask.place.team)
