"""Slack's AI-app surface: threads in the agent's pane and what the person is looking at.

- A person opens the agent's Messages tab (``app_home_opened``, tab "messages": the
  agent experience of ``manifest.yml``) or starts a thread in the older assistant
  pane (``assistant_thread_started``): suggested prompts drawn from what that person
  may see in memory (their open follow-ups, their recent topics).
- The pane's context changes (``assistant_thread_context_changed``): the channel the
  person is looking at is kept per thread.
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
import time
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bridge import messages
from bridge.slack.directory import Directory
from layers.episodic.episode import Viewer
from layers.episodic.store import EpisodeStore
from layers.storage.database import Database
from reflection.followups import Followups

log = logging.getLogger(__name__)

MAX_PROMPTS = 4  # assistant.threads.setSuggestedPrompts takes at most four
PROMPT_TITLE_CHARS = 60
TITLE_CHARS = 80


@dataclass(frozen=True)
class ThreadContext:
    """Who opened an assistant thread, and the channel they are looking at (if any)."""

    user: str
    team: str | None
    channel: str | None


class AssistantThreads:
    def __init__(
        self,
        db: Database,
        client: WebClient,
        directory: Directory,
        episodes: EpisodeStore | None,
        followups: Followups,
    ) -> None:
        self._db = db
        self._client = client
        self._directory = directory
        self._episodes = episodes
        self._followups = followups

    def started(self, event: dict[str, Any], team: str) -> None:
        """Keep the thread's context and offer prompts from this person's own memory."""
        thread = event.get("assistant_thread") or {}
        channel, thread_ts = str(thread.get("channel_id") or ""), str(thread.get("thread_ts") or "")
        user = str(thread.get("user_id") or "")
        if not (channel and thread_ts and user):
            return
        self.context_changed(event)
        looking_at = self.viewing(team, channel, thread_ts, user)
        self._offer(self.suggestions(team, channel, user, looking_at), channel_id=channel,
                    thread_ts=thread_ts)

    def opened(self, event: dict[str, Any], team: str) -> None:
        """The agent's Messages tab was opened: prompts for the next conversation there.

        No ``thread_ts``: for an agent-view app Slack sets prompts on the channel (and
        "silently fails" a call that names a thread).
        """
        channel, user = str(event.get("channel") or ""), str(event.get("user") or "")
        if event.get("tab") != "messages" or not (channel and user):
            return
        self._offer(self.suggestions(team, channel, user, None), channel_id=channel)

    def _offer(self, prompts: list[dict[str, str]], **where: str) -> None:
        try:
            self._client.assistant_threads_setSuggestedPrompts(
                prompts=prompts, title=messages.PROMPTS_TITLE, **where
            )
        except (SlackApiError, OSError) as error:
            log.warning("suggested prompts refused in %s: %s", where, error)

    def context_changed(self, event: dict[str, Any]) -> None:
        thread = event.get("assistant_thread") or {}
        context = thread.get("context") or {}
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO slack_thread_contexts (channel, thread_ts, user,"
                " context_team, context_channel, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    str(thread.get("channel_id") or ""),
                    str(thread.get("thread_ts") or ""),
                    str(thread.get("user_id") or ""),
                    context.get("team_id"),
                    context.get("channel_id"),
                    time.time(),
                ),
            )

    def context(self, channel: str, thread_ts: str) -> ThreadContext | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT user, context_team, context_channel FROM slack_thread_contexts"
                " WHERE channel = ? AND thread_ts = ?",
                (channel, thread_ts),
            ).fetchone()
        return None if row is None else ThreadContext(*row)

    def viewing(self, team: str, channel: str, thread_ts: str, user: str) -> str | None:
        """The channel this person is looking at beside the thread, if it may widen recall."""
        context = self.context(channel, thread_ts)
        if context is None or context.user != user or context.team not in (None, team):
            return None
        if not context.channel or not self._directory.is_member(context.channel, user):
            return None
        return context.channel

    def suggestions(
        self, team: str, channel: str, user: str, looking_at: str | None
    ) -> list[dict[str, str]]:
        """Open follow-ups first, then recent topics of this person, then starters."""
        prompts: list[dict[str, str]] = []
        for followup in self._followups.open_for(
            team=team, user=user, dm_channel=channel, shared_channel=looking_at, limit=2
        ):
            topic = _clip(followup.text, PROMPT_TITLE_CHARS - 11)
            prompts.append({"title": f"Follow up: {topic}", "message": followup.text})
        if self._episodes is not None:
            viewer = Viewer(team, looking_at or channel, "im", user)
            for episode in self._episodes.recent_asked_by(user, viewer, MAX_PROMPTS):
                topic = _clip(episode.user_text, PROMPT_TITLE_CHARS - 10)
                prompts.append(
                    {"title": messages.CONTINUE_TITLE.format(topic=topic),
                     "message": messages.CONTINUE_MESSAGE.format(said=episode.user_text)}
                )
        prompts.extend({"title": text, "message": text} for text in messages.STARTER_PROMPTS)
        unique = {prompt["message"]: prompt for prompt in prompts}
        return list(unique.values())[:MAX_PROMPTS]

    def name_thread(self, channel: str, thread_ts: str, first_message: str) -> None:
        """Title an assistant thread after its first message (elsewhere Slack refuses)."""
        try:
            self._client.assistant_threads_setTitle(
                channel_id=channel, thread_ts=thread_ts, title=_clip(first_message, TITLE_CHARS)
            )
        except (SlackApiError, OSError) as error:
            log.debug("no title for %s: %s", channel, error)


def _clip(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"
