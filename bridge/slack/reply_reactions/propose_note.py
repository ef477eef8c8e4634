"""🧠 on a reply: propose the exchange as a memory note; removing it withdraws the note."""

from __future__ import annotations

import logging

from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction, keep_effect, pop_effect
from bridge.slack.stores import SlackStores
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.note_cards import NOTE_CARD_REACTIONS, note_card_message
from layers.notes.store import Note
from layers.shared.audit import slack_actor
from layers.shared.places import Place

log = logging.getLogger(__name__)

BRAIN = "brain"


def propose_note(kit: Kit) -> ReplyReaction:
    async def handle(reacted: Reacted) -> None:
        reply, user = reacted.reply, reacted.user
        who = (await kit.directory.user(user)).name or user
        if not reacted.added:
            await kit.stores.run(lambda stores: _unkeep_note(stores, reacted, who))
            return
        episode = await kit.stores.run(lambda stores: stores.episodic.store.get(
            reacted.episode_id))
        if episode is None:
            return
        channel = await kit.directory.channel(reply.channel)
        # The note belongs where the exchange was said, and reaches prompts only there.
        place = Place(episode.team, episode.channel, episode.channel_type, episode.thread_ts,
                      channel.name)
        said = episode.user_text + (f" → {episode.summary}" if episode.summary else "")

        def propose(stores: SlackStores) -> Note:
            note = stores.notes.propose(
                said, place, user=user, author_name=who, source="🧠 reaction",
                session_id=reply.session_id, speakers=[user],
            )
            keep_effect(stores, reply, BRAIN, user, note.id)
            stores.audit.record(actor=slack_actor(user), action="note.propose",
                                target=f"note:{note.id}", origin="slack")
            return note

        note = await kit.stores.run(propose)
        if note.status == "proposed":
            await post_note_card(kit, note, reply.channel, reply.thread_ts)

    return ReplyReaction((BRAIN,), asker_only=True, handle=handle)


def _unkeep_note(stores: SlackStores, reacted: Reacted, who: str) -> None:
    note_id = pop_effect(stores, reacted.reply, BRAIN, reacted.user)
    # The same note may stand for another 🧠 (the same question answered twice).
    if note_id and not stores.effects.any_with(BRAIN, note_id):
        stores.notes.withdraw(note_id, by=who, why="🧠 reaction removed")
        stores.audit.record(actor=slack_actor(reacted.user), action="note.withdraw",
                            target=f"note:{note_id}", origin="slack")


async def post_note_card(kit: Kit, note: Note, channel: str, thread_ts: str | None) -> None:
    try:
        response = await kit.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, **note_card_message(note, kit.console)
        )
        ts = str(response["ts"])
        await kit.stores.run(lambda stores: stores.note_cards.record(note.id, channel=channel,
                                                                      ts=ts))
        for name in NOTE_CARD_REACTIONS:
            await kit.client.reactions_add(channel=channel, timestamp=ts, name=name)
    except SLACK_FAILURES as error:
        # The note waits all the same: `thoth notes list` shows it to the operator.
        log.warning("could not post the card of note %s: %s", note.id, error)
