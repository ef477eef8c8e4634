"""The Bolt app: every listener acknowledges at once and hands its work to the runner."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bridge.app import Thoth
from bridge.slack.cards import APPROVE_ACTION, REJECT_ACTION, SkillCards
from bridge.slack.conversation import Conversation
from bridge.slack.directory import Directory
from bridge.slack.events import Incoming, from_event, mentions
from bridge.slack.reactions import Reactions
from bridge.slack.replies import SlackReplies
from bridge.slack.runner import TurnRunner
from bridge.slack.seen import SeenDeliveries
from layers.working.sessions import Place

log = logging.getLogger(__name__)

RECALL_ACK = "Searching memory…"


@dataclass
class SlackBridge:
    app: App
    runner: TurnRunner
    conversation: Conversation
    reactions: Reactions
    cards: SkillCards
    bot_user: str | None


def build_bridge(thoth: Thoth, client: WebClient, runner: TurnRunner) -> SlackBridge:
    settings = thoth.settings
    assert settings.slack_bot_token is not None
    app = App(
        # The client carries the bot token (and the base URL and retry handlers).
        signing_secret=(
            settings.slack_signing_secret.get_secret_value()
            if settings.slack_signing_secret
            else None
        ),
        client=client,
        # Bolt acks first and runs listeners after; ours only enqueue, so acks stay fast.
        process_before_response=False,
        logger=logging.getLogger("slack_bolt"),
    )
    bot_user = str(client.auth_test().get("user_id") or "") or None
    directory = Directory(client)
    replies = SlackReplies(thoth.db)
    cards = SkillCards(thoth.db, client)
    conversation = Conversation(thoth, client, directory, replies)
    reactions = Reactions(thoth, client, directory, replies, cards, bot_user=bot_user)
    seen = SeenDeliveries(thoth.db)
    bridge = SlackBridge(app, runner, conversation, reactions, cards, bot_user)

    def accept(body: dict[str, Any], event: dict[str, Any], *, addressed: bool) -> None:
        incoming = from_event(
            event, team=str(body.get("team_id") or ""), event_id=body.get("event_id"),
            bot_user=bot_user,
        )
        if incoming is None or not (addressed or _followed(incoming, event, replies, bot_user)):
            return
        # A retry has the same event id; a mention also arrives as a message event.
        if seen.first_time(f"event:{incoming.event_id}", f"msg:{incoming.channel}:{incoming.ts}"):
            runner.submit(conversation.handle(incoming))

    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any]) -> None:
        accept(body, event, addressed=True)

    @app.event("message")
    def on_message(body: dict[str, Any], event: dict[str, Any]) -> None:
        accept(body, event, addressed=event.get("channel_type") == "im")

    @app.event("reaction_added")
    def on_reaction_added(event: dict[str, Any]) -> None:
        runner.submit(reactions.handle(event, added=True), turn=False)

    @app.event("reaction_removed")
    def on_reaction_removed(event: dict[str, Any]) -> None:
        runner.submit(reactions.handle(event, added=False), turn=False)

    @app.command("/recall")
    def on_recall(ack: Ack, command: dict[str, Any]) -> None:
        ack(RECALL_ACK)
        runner.submit(_recall_command(bridge, client, command), turn=False)

    @app.command("/done")
    def on_done(ack: Ack, command: dict[str, Any]) -> None:
        ack()
        runner.submit(_done_command(thoth, conversation, command), turn=False)

    @app.action(APPROVE_ACTION)
    def on_approve(ack: Ack, body: dict[str, Any], context: BoltContext) -> None:
        ack()
        runner.submit(_decide(reactions, body, approve=True), turn=False)

    @app.action(REJECT_ACTION)
    def on_reject(ack: Ack, body: dict[str, Any], context: BoltContext) -> None:
        ack()
        runner.submit(_decide(reactions, body, approve=False), turn=False)

    return bridge


def _followed(
    incoming: Incoming, event: dict[str, Any], replies: SlackReplies, bot_user: str | None
) -> bool:
    """A message the agent answers without being named: in a thread it is part of."""
    if mentions(str(event.get("text") or ""), bot_user):
        return True
    return event.get("thread_ts") is not None and replies.in_thread(
        incoming.channel, incoming.thread_root
    )


async def _recall_command(bridge: SlackBridge, client: WebClient, command: dict[str, Any]) -> None:
    channel, user = str(command.get("channel_id")), str(command.get("user_id"))
    query = str(command.get("text") or "").strip()
    if not query:
        text = "Usage: /recall what did we decide about the deploy?"
    else:
        info = await asyncio.to_thread(
            bridge.conversation.directory.channel, channel, _command_channel_type(command)
        )
        place = Place(str(command.get("team_id")), channel, info.channel_type, None, info.name)
        text = await bridge.conversation.recall_text(query, place, user, with_links=True)
    try:
        await asyncio.to_thread(client.chat_postEphemeral, channel=channel, user=user, text=text)
    except SlackApiError:
        # Not a member of the channel (or a DM between two people): answer through the
        # command's response_url, which works everywhere a command can be typed.
        url = str(command.get("response_url") or "")
        if url:
            await asyncio.to_thread(
                WebhookClient(url).send, text=text, response_type="ephemeral"
            )


async def _done_command(thoth: Thoth, conversation: Conversation, command: dict[str, Any]) -> None:
    channel = str(command.get("channel_id"))
    prefix = f"slack:{command.get('team_id')}:{channel}:"
    session = await asyncio.to_thread(thoth.sessions.latest_open_with_prefix, prefix)
    if session is None:
        await conversation.post_ephemeral(channel, str(command.get("user_id")), "nothing to end")
        return
    await conversation.end_session(session.key, channel, session.place.thread_ts or "")


async def _decide(reactions: Reactions, body: dict[str, Any], *, approve: bool) -> None:
    action = (body.get("actions") or [{}])[0]
    container = body.get("container") or {}
    await reactions.decide(
        str(action.get("value")),
        approve=approve,
        user=str((body.get("user") or {}).get("id")),
        channel=str(container.get("channel_id") or (body.get("channel") or {}).get("id")),
        ts=str(container.get("message_ts") or (body.get("message") or {}).get("ts")),
    )


def _command_channel_type(command: dict[str, Any]) -> str | None:
    name = str(command.get("channel_name") or "")
    if name == "directmessage":
        return "im"
    if name == "privategroup":
        return "group"
    return None
