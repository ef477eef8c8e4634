"""Message shortcuts: "Remember this" proposes a memory note from any message, where it
was said (governed like a 🧠 one: its card waits for a founder); "Forget this" forgets
an exchange with Thoth wherever it was kept, as 🗑️ does, and only the asker's own."""

from __future__ import annotations

import logging
from typing import Any

from bridge import messages
from bridge.forget_exchange import forget_exchange
from bridge.slack.reply_reactions import Kit
from bridge.slack.reply_reactions.propose_note import post_note_card
from bridge.slack.stores import SlackStores
from bridge.slack.workspace_guard import enterprise_of
from bridge.slack_api.directory import place_team
from layers.notes.store import Note
from layers.shared.audit import slack_actor
from layers.shared.places import Place

log = logging.getLogger(__name__)

REMEMBER_THIS = "remember_this"
FORGET_THIS = "forget_this"


class Shortcuts:
    def __init__(self, kit: Kit) -> None:
        self._kit = kit

    async def remember(self, payload: dict[str, Any]) -> None:
        channel, ts, thread_ts, user, message = _where(payload)
        said = str(message.get("text") or "").strip()
        if not (channel and user and said):
            return
        who = (await self._kit.directory.user(user)).name or user
        info = await self._kit.directory.channel(channel)
        team = place_team(info, str((payload.get("team") or {}).get("id") or ""),
                          enterprise_of(payload))
        place = Place(team, channel, info.channel_type, thread_ts or ts, info.name)
        speaker = str(message.get("user") or user)

        def propose(stores: SlackStores) -> Note:
            note = stores.notes.propose(said, place, user=user, author_name=who,
                                        source="“Remember this”", session_id=None,
                                        speakers=[speaker])
            stores.audit.record(actor=slack_actor(user), action="note.propose",
                                target=f"note:{note.id}", origin="slack shortcut")
            return note

        note = await self._kit.stores.run(propose)
        if note.status == "proposed":
            await post_note_card(self._kit, note, channel, thread_ts or ts)
        await self._kit.tell(user, channel, thread_ts, messages.NOTE_PROPOSED
                             if note.status == "proposed" else messages.NOTE_KEPT_AT_ONCE)

    async def forget(self, payload: dict[str, Any]) -> None:
        channel, ts, thread_ts, user, _ = _where(payload)
        if not (channel and user):
            return
        reply = await self._kit.stores.run(lambda stores: stores.replies.find(channel, ts))
        if reply is None or not reply.episode_id or reply.asker != user:
            await self._kit.tell(user, channel, thread_ts, messages.FORGET_THIS_NOT_YOURS)
            return
        episode_id = reply.episode_id
        forgotten = await self._kit.stores.run(lambda stores: forget_exchange(
            stores, episode_id, actor=slack_actor(user), who=user, origin="slack shortcut"))
        await self._kit.tell(user, channel, thread_ts,
                             messages.FORGOTTEN if forgotten else messages.ALREADY_FORGOTTEN)


def _where(payload: dict[str, Any]) -> tuple[str, str, str | None, str, dict[str, Any]]:
    """The message's channel, ts and thread, who used the shortcut, and the message."""
    message = payload.get("message") or {}
    channel = str((payload.get("channel") or {}).get("id") or "")
    user = str((payload.get("user") or {}).get("id") or "")
    thread_ts = message.get("thread_ts")
    return (channel, str(message.get("ts") or payload.get("message_ts") or ""),
            None if thread_ts is None else str(thread_ts), user, message)
