"""🧠 on a reply: propose the exchange as a memory note; removing it withdraws the note."""

from __future__ import annotations

import asyncio
import logging

from bridge.slack.note_cards import NOTE_CARD_REACTIONS, note_card_message
from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction
from bridge.slack.web import SLACK_FAILURES
from layers.notes.store import Note
from layers.places import Place

log = logging.getLogger(__name__)

BRAIN = "brain"


def brain(kit: Kit) -> ReplyReaction:
    async def handle(reacted: Reacted) -> None:
        reply, user = reacted.reply, reacted.user
        who = (await kit.directory.user(user)).name or user
        if not reacted.added:
            await asyncio.to_thread(_unkeep_note, kit, reacted, who)
            return
        episode = await asyncio.to_thread(kit.parts.episodic.store.get, reacted.episode_id)
        if episode is None:
            return
        channel = await kit.directory.channel(reply.channel)
        # The note belongs where the exchange was said, and reaches prompts only there.
        place = Place(episode.team, episode.channel, episode.channel_type, episode.thread_ts,
                      channel.name)
        said = episode.user_text + (f" → {episode.summary}" if episode.summary else "")
        note = await asyncio.to_thread(
            kit.parts.notes.propose, said, place, user=user, author_name=who,
            source="🧠 reaction", session_id=reply.session_id, speakers=[user],
        )
        await asyncio.to_thread(kit.keep_effect, reply, BRAIN, user, note.id)
        if note.status == "proposed":
            await _post_note_card(kit, note, reply.channel, reply.thread_ts)

    return ReplyReaction((BRAIN,), asker_only=True, handle=handle)


def _unkeep_note(kit: Kit, reacted: Reacted, who: str) -> None:
    note_id = kit.pop_effect(reacted.reply, BRAIN, reacted.user)
    # The same note may stand for another 🧠 (the same question answered twice).
    if note_id and not kit.parts.effects.any_with(BRAIN, note_id):
        kit.parts.notes.withdraw(note_id, by=who, why="🧠 reaction removed")


async def _post_note_card(kit: Kit, note: Note, channel: str, thread_ts: str | None) -> None:
    try:
        response = await kit.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, **note_card_message(note)
        )
        ts = str(response["ts"])
        await asyncio.to_thread(kit.note_cards.record, note.id, channel=channel, ts=ts)
        for name in NOTE_CARD_REACTIONS:
            await kit.client.reactions_add(channel=channel, timestamp=ts, name=name)
    except SLACK_FAILURES as error:
        # The note waits all the same: `thoth notes list` shows it to the operator.
        log.warning("could not post the card of note %s: %s", note.id, error)
