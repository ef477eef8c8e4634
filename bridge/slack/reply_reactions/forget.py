"""🗑️ on a reply: forget the exchange wherever Thoth kept it. Decided, and said in the
thread: it is deleted for good (keeping its text to restore it would defeat the
forgetting), so removing 🗑️ cannot bring it back."""

from __future__ import annotations

from bridge import messages
from bridge.forget_exchange import forget_exchange
from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction
from bridge.slack_api.escaping import escape
from layers.shared.audit import slack_actor

WASTEBASKET = "wastebasket"


def forget_exchange_reaction(kit: Kit) -> ReplyReaction:
    async def handle(reacted: Reacted) -> None:
        if reacted.added and await kit.stores.run(lambda stores: forget_exchange(
            stores, reacted.episode_id, actor=slack_actor(reacted.user), who=reacted.user,
            origin="slack")):
            await kit.client.chat_postMessage(
                channel=reacted.reply.channel, thread_ts=reacted.reply.thread_ts,
                markdown_text=escape(messages.FORGOTTEN),
            )

    return ReplyReaction((WASTEBASKET,), asker_only=True, handle=handle)
