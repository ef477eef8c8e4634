"""🗑️ on a reply: forget the exchange wherever Thoth kept it. Decided, and said in the
thread: it is deleted for good (keeping its text to restore it would defeat the
forgetting), so removing 🗑️ cannot bring it back."""

from __future__ import annotations

import asyncio

from bridge import messages
from bridge.slack.escaping import escape
from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction

WASTEBASKET = "wastebasket"


def wastebasket(kit: Kit) -> ReplyReaction:
    async def handle(reacted: Reacted) -> None:
        if reacted.added and await asyncio.to_thread(
            forget_everywhere, kit, reacted.episode_id, reacted.user
        ):
            await kit.client.chat_postMessage(
                channel=reacted.reply.channel, thread_ts=reacted.reply.thread_ts,
                markdown_text=escape(messages.FORGOTTEN),
            )

    return ReplyReaction((WASTEBASKET,), asker_only=True, handle=handle)


def forget_everywhere(kit: Kit, episode_id: str, user: str) -> bool:
    """The exchange, wherever Thoth kept it: the episode (text and vector), its turn in
    the transcript (so it is neither replayed nor reflected on), and the notes still
    waiting that reflection drew from its session."""
    parts = kit.parts
    episode = parts.episodic.store.get(episode_id)
    if episode is None or not parts.episodic.forget(episode_id):
        return False
    if episode.session_id:
        parts.transcript.forget_turn(episode.session_id, episode.created_at, episode.user_text)
        parts.notes.reject_pending_of(episode.session_id, by=f"{user} (🗑️ forgot the exchange)")
    return True
