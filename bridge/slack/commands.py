"""Commands in Slack: the table's slash commands as Bolt delivers them, and the answers.

What each command does is written once, in ``bridge/commands/``; here a slash command's
payload becomes an ``Invocation`` (where it was typed, who typed it, what they may read)
and its ``Reply`` is answered only to the person who typed it (or, when the reply is
for everyone in the session, in its thread).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bridge.commands import Command, Invocation, Reply, Where, run
from bridge.pipeline.turn import viewer_at
from bridge.slack.conversation import Conversation
from bridge.slack.workspace_guard import enterprise_of
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import confined_reader, place_team
from bridge.slack_api.escaping import escape, preview, split_message
from layers.shared.places import Place

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_S = 10


async def slash_command(
    command: Command, conversation: Conversation, client: AsyncWebClient,
    payload: dict[str, Any],
) -> None:
    """Run one slash command Bolt delivered (acknowledged already) and answer it."""
    invocation = await _invocation(conversation, payload)
    reply = await run(command, invocation, conversation.commands)
    if reply.in_thread:
        await conversation.say_in_thread(invocation.place.channel,
                                         invocation.place.thread_ts or "", reply)
        return
    if reply.blocks:
        await answer_with_blocks(client, payload, reply)
        return
    markdown = await conversation.reply_markdown(reply, with_links=True)
    if markdown:
        await answer_privately(client, payload, markdown)


async def _invocation(conversation: Conversation, payload: dict[str, Any]) -> Invocation:
    channel, user = str(payload.get("channel_id")), str(payload.get("user_id"))
    team = str(payload.get("team_id"))
    directory = conversation.directory
    info = await directory.channel(channel, _command_channel_type(payload))
    asker = await directory.user(user)
    place = Place(place_team(info, team, enterprise_of(payload)), channel,
                  info.channel_type, None, info.name)
    # A slash command is typed in a channel, not a thread: the session it ends is the
    # channel's latest open one, and what it says for everyone goes in that one's thread.
    prefix = f"slack:{place.team}:{channel}:"
    session = await conversation.commands.sessions.run(
        lambda sessions: sessions.latest_open_with_prefix(prefix))
    if session is not None:
        place = Place(place.team, channel, place.channel_type, session.place.thread_ts,
                      place.channel_name)
    confined = confined_reader(info, asker, team, payload.get("user_team") or None)
    return Invocation(
        str(payload.get("text") or ""), user, place, Where.SLASH,
        viewer_at(place, user, confined=confined),
        session_key=session.key if session is not None else None, zone=asker.tz,
    )


async def answer_privately(
    client: AsyncWebClient, command: dict[str, Any], markdown: str
) -> None:
    """An ephemeral answer in the channel, or through the command's ``response_url``.

    Slack refuses ``chat.postEphemeral`` where the bot is not a member (and in DMs
    between two people); the response URL works wherever a command can be typed.
    """
    text = (split_message(markdown) or ["…"])[0]
    await _ephemeral(client, command, preview(text, 150), [{"type": "markdown", "text": text}],
                     markdown_text=text)


async def answer_with_blocks(client: AsyncWebClient, command: dict[str, Any],
                             reply: Reply) -> None:
    """A reply with Block Kit (buttons), ephemeral as every command's answer; through the
    ``response_url`` where Slack refuses the ephemeral."""
    blocks = [dict(block) for block in reply.blocks]
    await _ephemeral(client, command, preview(escape(reply.text), 150), blocks)


async def _ephemeral(client: AsyncWebClient, command: dict[str, Any], text: str,
                     blocks: list[dict[str, Any]], *, markdown_text: str | None = None) -> None:
    """Only to the person who typed the command: ``chat.postEphemeral`` (as markdown
    when ``markdown_text``), else the ``response_url`` with ``blocks``."""
    channel, user = str(command.get("channel_id")), str(command.get("user_id"))
    try:
        if markdown_text is not None:
            await client.chat_postEphemeral(channel=channel, user=user,
                                            markdown_text=markdown_text)
        else:
            await client.chat_postEphemeral(channel=channel, user=user, text=text,
                                            blocks=blocks)
        return
    except SLACK_FAILURES as error:
        log.info("ephemeral refused in %s (%s); answering through response_url", channel, error)
    url = str(command.get("response_url") or "")
    if not url:
        log.warning("command in %s had no response_url; the answer is lost", channel)
        return
    try:
        answer = await AsyncWebhookClient(url, timeout=WEBHOOK_TIMEOUT_S).send(
            text=text, blocks=blocks, response_type="ephemeral")
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

