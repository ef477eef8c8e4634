"""Slack's AI-app surface: threads in the agent's pane and what the person is looking at.

- A person opens the agent's Messages tab (``app_home_opened``, tab "messages": the
  agent experience of ``manifest.yml``) or starts a thread in the older assistant
  pane (``assistant_thread_started``): suggested prompts drawn from what that person
  may see in memory (their open follow-ups, their recent topics).
- The pane's context changes (``assistant_thread_context_changed``): the channel the
  person is looking at is kept per thread. In the agent view Slack says it per person
  (``app_context_changed``, and ``app_context`` on ``message.im`` and
  ``app_home_opened``): kept per person, and used where no thread says otherwise.
- The first message of such a thread names it (``assistant.threads.setTitle``).

Decided (DESIGN.md "Memory must never leak"): a turn in the pane is a DM turn, and
its recall sees what that person may read from there: their own DMs, public channels
of the workspace, and the one channel they are looking at, and only while Slack says
they are in it (``conversations.members``, asked again every few minutes: someone
removed from a channel stops seeing its memories). Another workspace's channel adds
nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.slack.stores import SlackStores
from bridge.slack.thread_contexts import app_context_of
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import Directory, confined_reader
from layers.shared.offloaded import Offloaded
from layers.shared.places import Viewer

log = logging.getLogger(__name__)

MAX_PROMPTS = 4  # assistant.threads.setSuggestedPrompts takes at most four
PROMPT_TITLE_CHARS = 60
TITLE_CHARS = 80


class AssistantThreads:
    def __init__(
        self,
        stores: Offloaded[SlackStores],
        client: AsyncWebClient,
        directory: Directory,
    ) -> None:
        self._stores = stores
        self._client = client
        self._directory = directory

    async def started(self, event: dict[str, Any], team: str) -> None:
        """Keep the thread's context and offer prompts from this person's own memory."""
        thread = event.get("assistant_thread") or {}
        channel, thread_ts = str(thread.get("channel_id") or ""), str(thread.get("thread_ts") or "")
        user = str(thread.get("user_id") or "")
        if not (channel and thread_ts and user):
            return
        await self.keep_context(event)
        looking_at = await self.viewing(team, channel, thread_ts, user)
        confined = await self._confined(team, channel, user)
        prompts = await self._stores.run(
            lambda stores: _suggestions(stores, team, channel, user, looking_at, confined))
        await self._offer(prompts, channel_id=channel, thread_ts=thread_ts)

    async def opened(self, event: dict[str, Any], team: str) -> None:
        """The agent's Messages tab was opened: prompts for the next conversation there.

        No ``thread_ts``: for an agent-view app Slack sets prompts on the channel (and
        "silently fails" a call that names a thread).
        """
        channel, user = str(event.get("channel") or ""), str(event.get("user") or "")
        if event.get("tab") != "messages" or not (channel and user):
            return
        await self.looking_at(event, team, user)
        confined = await self._confined(team, channel, user)
        looking_at = await self.viewing(team, channel, "", user)
        prompts = await self._stores.run(
            lambda stores: _suggestions(stores, team, channel, user, looking_at, confined))
        await self._offer(prompts, channel_id=channel)

    async def looking_at(self, event: dict[str, Any], team: str, user: str) -> None:
        """Keep what the agent view says ``user`` is looking at, when the event says it
        (``app_context_changed``; ``app_context`` on ``message.im``, ``app_home_opened``)."""
        context = event.get("context") if event.get("type") == "app_context_changed" else (
            app_context_of(event))
        if context is not None and team and user:
            await self._stores.run(
                lambda stores: stores.contexts.keep_app_context(team, user, context))

    async def keep_context(self, event: dict[str, Any]) -> None:
        """Keep the older pane's context of one thread (``assistant_thread_*``)."""
        await self._stores.run(lambda stores: stores.contexts.keep(event))

    async def _offer(self, prompts: list[dict[str, str]], **where: str) -> None:
        try:
            await self._client.assistant_threads_setSuggestedPrompts(
                prompts=prompts, title=messages.PROMPTS_TITLE, **where
            )
        except SLACK_FAILURES as error:
            log.warning("suggested prompts refused in %s: %s", where, error)

    async def viewing(self, team: str, channel: str, thread_ts: str, user: str) -> str | None:
        """The channel this person is looking at beside the thread (the older pane's, per
        thread; else the agent view's, per person), if it may widen recall."""
        context = await self._stores.run(
            lambda stores: stores.contexts.find(channel, thread_ts)
            or stores.contexts.find_app_context(team, user))
        if context is None or context.user != user or context.team not in (None, team):
            return None
        if not context.channel or not await self._directory.is_member(context.channel, user):
            return None
        looked_at = await self._directory.channel(context.channel)
        if confined_reader(looked_at, await self._directory.user(user), team):
            return None  # a guest, another organisation's person, or a shared channel
        return context.channel

    async def _confined(self, team: str, channel: str, user: str) -> bool:
        here = await self._directory.channel(channel, "im")
        return confined_reader(here, await self._directory.user(user), team)

    async def name_thread(self, channel: str, thread_ts: str, first_message: str) -> None:
        """Title an assistant thread after its first message (elsewhere Slack refuses)."""
        try:
            await self._client.assistant_threads_setTitle(
                channel_id=channel, thread_ts=thread_ts, title=_clip(first_message, TITLE_CHARS)
            )
        except SLACK_FAILURES as error:
            log.debug("no title for %s: %s", channel, error)


def _clip(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _suggestions(
    stores: SlackStores, team: str, channel: str, user: str, looking_at: str | None,
    confined: bool,
) -> list[dict[str, str]]:
    """Open follow-ups first, then recent topics of this person, then starters (reads
    the database: run in a thread)."""
    prompts: list[dict[str, str]] = []
    for followup in stores.followups.open_for(
        team=team, user=user, dm_channel=channel, shared_channel=looking_at, limit=2
    ):
        topic = _clip(followup.text, PROMPT_TITLE_CHARS - 11)
        prompts.append({"title": f"Follow up: {topic}", "message": followup.text})
    if stores.recent_episodes is not None:
        viewer = Viewer(team, looking_at or channel, "im", user, confined=confined)
        for episode in stores.recent_episodes.recent_asked_by(user, viewer, MAX_PROMPTS):
            topic = _clip(episode.user_text, PROMPT_TITLE_CHARS - 10)
            prompts.append(
                {"title": messages.CONTINUE_TITLE.format(topic=topic),
                 "message": messages.CONTINUE_MESSAGE.format(said=episode.user_text)}
            )
    prompts.extend({"title": text, "message": text} for text in messages.STARTER_PROMPTS)
    unique = {prompt["message"]: prompt for prompt in prompts}
    return list(unique.values())[:MAX_PROMPTS]
