"""Slash commands (``/recall``, ``/done``): acknowledged at once by Bolt, then answered
only to the person who typed them."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bridge import messages
from bridge.slack.conversation import Conversation
from bridge.slack.stores import SlackStores
from bridge.slack.workspace_guard import enterprise_of
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import confined_reader, place_team
from bridge.slack_api.escaping import escape, preview, split_message
from layers.offloaded import Offloaded
from layers.places import Place

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_S = 10


async def recall_command(
    conversation: Conversation, client: AsyncWebClient, command: dict[str, Any]
) -> None:
    channel, user = str(command.get("channel_id")), str(command.get("user_id"))
    query = str(command.get("text") or "").strip()
    if not query:
        markdown = escape(messages.RECALL_USAGE)
    else:
        team = str(command.get("team_id"))
        info = await conversation.directory.channel(channel, _command_channel_type(command))
        asker = await conversation.directory.user(user)
        place = Place(place_team(info, team, enterprise_of(command)), channel,
                      info.channel_type, None, info.name)
        markdown = await conversation.recall_markdown(
            query, place, user, with_links=True,
            confined=confined_reader(info, asker, team, command.get("user_team") or None),
            zone=asker.tz,
        )
    await answer_privately(client, command, markdown)


async def done_command(
    stores: Offloaded[SlackStores],
    conversation: Conversation,
    client: AsyncWebClient,
    command: dict[str, Any],
) -> None:
    channel = str(command.get("channel_id"))
    info = await conversation.directory.channel(channel, _command_channel_type(command))
    team = place_team(info, str(command.get("team_id")), enterprise_of(command))
    prefix = f"slack:{team}:{channel}:"
    session = await stores.run(lambda stores: stores.sessions.latest_open_with_prefix(prefix))
    if session is None:
        await answer_privately(client, command, escape(messages.NOTHING_TO_END))
        return
    await conversation.end_session(
        session.key, channel, session.place.thread_ts or "", str(command.get("user_id"))
    )


async def answer_privately(
    client: AsyncWebClient, command: dict[str, Any], markdown: str
) -> None:
    """An ephemeral answer in the channel, or through the command's ``response_url``.

    Slack refuses ``chat.postEphemeral`` where the bot is not a member (and in DMs
    between two people); the response URL works wherever a command can be typed.
    """
    channel, user = str(command.get("channel_id")), str(command.get("user_id"))
    text = (split_message(markdown) or ["…"])[0]
    try:
        await client.chat_postEphemeral(channel=channel, user=user, markdown_text=text)
        return
    except SLACK_FAILURES as error:
        log.info("ephemeral refused in %s (%s); answering through response_url", channel, error)
    url = str(command.get("response_url") or "")
    if not url:
        log.warning("command in %s had no response_url; the answer is lost", channel)
        return
    try:
        answer = await AsyncWebhookClient(url, timeout=WEBHOOK_TIMEOUT_S).send(
            text=preview(text, 150),
            blocks=[{"type": "markdown", "text": text}],
            response_type="ephemeral",
        )
    except SLACK_FAILURES as error:
        log.warning("answering through response_url failed: %s", error)
        return
    if answer.status_code != 200:
        # Response URLs expire after 30 minutes and take five answers at most.
        log.warning("response_url refused the answer: %s %s", answer.status_code, answer.body)


def _command_channel_type(command: dict[str, Any]) -> str | None:
    name = str(command.get("channel_name") or "")
    if name == "directmessage":
        return "im"
    if name == "privategroup":
        return "group"
    return None
