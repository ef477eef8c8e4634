"""🗑️ on a reply: forget the exchange wherever Thoth kept it. Decided, and said in the
thread: it is deleted for good (keeping its text to restore it would defeat the
forgetting), so removing 🗑️ cannot bring it back."""

from __future__ import annotations

from bridge import messages
from bridge.slack.escaping import escape
from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction
from bridge.slack.stores import SlackStores
from layers.audit.log import slack_actor

WASTEBASKET = "wastebasket"


def wastebasket(kit: Kit) -> ReplyReaction:
    async def handle(reacted: Reacted) -> None:
        if reacted.added and await kit.stores.run(
            lambda stores: forget_everywhere(stores, reacted.episode_id, reacted.user)
        ):
            await kit.client.chat_postMessage(
                channel=reacted.reply.channel, thread_ts=reacted.reply.thread_ts,
                markdown_text=escape(messages.FORGOTTEN),
            )

    return ReplyReaction((WASTEBASKET,), asker_only=True, handle=handle)


def forget_everywhere(stores: SlackStores, episode_id: str, user: str) -> bool:
    """The exchange, wherever Thoth kept it: the episode (text and vector), its turn in
    the transcript (so it is neither replayed nor reflected on), and the notes still
    waiting that reflection drew from its session."""
    episode = stores.episodic.store.get(episode_id)
    if episode is None or not stores.episodic.forget(episode_id):
        return False
    if episode.session_id:
        stores.transcript.forget_turn(episode.session_id, episode.created_at, episode.user_text)
        stores.notes.reject_pending_of(episode.session_id,
                                       by=f"{user} (🗑️ forgot the exchange)")
    stores.audit.record(actor=slack_actor(user), action="episode.forget",
                        target=f"episode:{episode_id}", origin="slack")
    return True
