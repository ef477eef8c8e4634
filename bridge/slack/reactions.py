"""Reactions (DESIGN.md "Reactions"): on the agent's replies, on skill-draft cards and on
memory-note cards (a founder's ✅ keeps the note, ❌ rejects it).

Only humans count, never a bot or the agent itself; ``reaction_removed`` undoes
what ``reaction_added`` did, per person. ✅ / ❌ are anyone's to give; 🧠, 🗑️ and 👤
belong to the person who asked, since the exchange holds their words. One
exception, decided and said in the thread: 🗑️ deletes the episode for good
(keeping its text to restore it would defeat the forgetting), so removing 🗑️
cannot bring it back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.pipeline.keyed_locks import KeyedLocks
from bridge.slack.cards import CardStore, show_outcome
from bridge.slack.directory import Directory
from bridge.slack.escaping import escape
from bridge.slack.feedback import HELPFUL, NOT_HELPFUL
from bridge.slack.note_cards import NoteCardStore, note_card_message
from bridge.slack.replies import ReplyRecord, SlackReplies
from bridge.slack.reply_reactions import Kit, Reacted, ReactionParts, ReplyReaction
from bridge.slack.reply_reactions.brain import brain
from bridge.slack.reply_reactions.bust import bust
from bridge.slack.reply_reactions.wastebasket import wastebasket
from bridge.slack.web import SLACK_FAILURES
from layers.episodic.episode import Feedback
from layers.errors import ThothError

log = logging.getLogger(__name__)

WORKED, DID_NOT_WORK = "white_check_mark", "x"
# What a reaction on a reply does, by its emoji (bridge/slack/reply_reactions/); ✅ / ❌
# are this module's own, since the feedback buttons count with them.
REPLY_REACTIONS: tuple[Callable[[Kit], ReplyReaction], ...] = (brain, wastebasket, bust)
# A feedback-button click, kept beside the reactions; its effect is WORKED or DID_NOT_WORK.
BUTTON = "feedback_button"
BUTTON_EFFECTS = {HELPFUL: WORKED, NOT_HELPFUL: DID_NOT_WORK}


class Reactions:
    def __init__(
        self,
        parts: ReactionParts,
        client: AsyncWebClient,
        directory: Directory,
        replies: SlackReplies,
        cards: CardStore,
        note_cards: NoteCardStore,
        *,
        bot_user: str | None,
    ) -> None:
        self._parts = parts
        self._client = client
        self._directory = directory
        self._replies = replies
        self._cards = cards
        self._note_cards = note_cards
        self._bot_user = bot_user
        self._per_message = KeyedLocks()
        kit = Kit(parts, client, directory, note_cards, self._tell)
        self._kit = kit
        feedback = ReplyReaction((WORKED, DID_NOT_WORK), asker_only=False,
                                 handle=self._feedback_reacted)
        self._on_replies = {name: reaction
                            for reaction in (feedback, *(make(kit) for make in REPLY_REACTIONS))
                            for name in reaction.names}

    async def handle(self, event: dict[str, Any], *, added: bool) -> None:
        item = event.get("item") or {}
        channel, ts = str(item.get("channel") or ""), str(item.get("ts") or "")
        # Reactions on one message apply in the order Slack sent them (an add and its
        # removal a moment later must not swap); other messages' go on meanwhile.
        async with self._per_message.hold(f"{channel}:{ts}"):
            await self._handle(event, channel, ts, added=added)

    async def _handle(self, event: dict[str, Any], channel: str, ts: str, *, added: bool) -> None:
        item = event.get("item") or {}
        user, name = str(event.get("user") or ""), str(event.get("reaction") or "")
        if not user or user == self._bot_user or item.get("type") != "message":
            return
        if (await self._directory.user(user)).is_bot:
            return
        note_id = await asyncio.to_thread(self._note_cards.find, channel, ts)
        if note_id is not None:
            if added and name in (WORKED, DID_NOT_WORK):
                await self._decide_note(note_id, keep=name == WORKED, user=user,
                                        channel=channel, ts=ts, thread_ts=item.get("thread_ts"))
            return
        card = await asyncio.to_thread(self._cards.find, channel, ts)
        if card is not None:
            if added and name in (WORKED, DID_NOT_WORK):
                await self.decide(
                    card.draft_id, approve=name == WORKED, user=user, channel=channel, ts=ts,
                    thread_ts=card.thread_ts,
                )
            return
        reply = await asyncio.to_thread(self._replies.find, channel, ts)
        if reply is None or not reply.episode_id:
            return
        reaction = self._on_replies.get(name)
        if reaction is None:
            return
        if reaction.asker_only and user != reply.asker:
            if added and reaction.says_it_is_the_askers:
                await self._tell(user, reply.channel, reply.thread_ts, messages.ASKER_ONLY)
            return
        await reaction.handle(Reacted(reply, reply.episode_id, name, user, added))

    async def decide(
        self,
        draft_id: str,
        *,
        approve: bool,
        user: str,
        channel: str,
        ts: str,
        thread_ts: str | None,
    ) -> None:
        """Approve or reject a draft from its card (a button or a reaction)."""
        if user not in self._parts.founders:
            await self._tell(user, channel, thread_ts, messages.NOT_A_FOUNDER)
            return
        drafts = self._parts.drafts
        try:
            draft = await asyncio.to_thread(
                drafts.approve if approve else drafts.reject, draft_id, by=user
            )
        except ThothError as error:
            await self._tell(user, channel, thread_ts, f"Sorry: {error}")
            return
        await show_outcome(self._client, draft, channel=channel, ts=ts)

    async def _decide_note(
        self, note_id: str, *, keep: bool, user: str, channel: str, ts: str,
        thread_ts: str | None,
    ) -> None:
        """Keep or reject a memory note from its card: a founder's ✅ or ❌."""
        if user not in self._parts.founders:
            await self._tell(user, channel, thread_ts, messages.NOT_A_FOUNDER_NOTES)
            return
        try:
            note = await asyncio.to_thread(self._parts.notes.decide, note_id, keep=keep, by=user)
        except ThothError as error:
            await self._tell(user, channel, thread_ts, f"Sorry: {error}")
            return
        await self._client.chat_update(channel=channel, ts=ts, **note_card_message(note))

    async def feedback_clicked(self, *, channel: str, ts: str, user: str, value: str) -> None:
        """A feedback button under a reply: the same as that person's ✅ / ❌, undone by a
        second click on the same button."""
        effect = BUTTON_EFFECTS.get(value)
        if effect is None:
            return
        async with self._per_message.hold(f"{channel}:{ts}"):
            reply = await asyncio.to_thread(self._replies.find, channel, ts)
            if reply is None or not reply.episode_id:
                return
            taken_back = await asyncio.to_thread(self._click, reply, reply.episode_id, user, effect)
        text = messages.FEEDBACK_TAKEN_BACK if taken_back else messages.FEEDBACK_THANKS
        await self._tell(user, channel, reply.thread_ts, text)

    def _click(self, reply: ReplyRecord, episode_id: str, user: str, effect: str) -> bool:
        previous = self._kit.pop_effect(reply, BUTTON, user)
        if previous != effect:
            self._kit.keep_effect(reply, BUTTON, user, effect)
        self._apply_feedback(reply, episode_id)
        return previous == effect

    async def _tell(self, user: str, channel: str, thread_ts: str | None, text: str) -> None:
        """An ephemeral note to one person, in the thread it is about."""
        try:
            await self._client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread_ts, markdown_text=escape(text)
            )
        except SLACK_FAILURES as error:
            log.warning("could not tell %s in %s: %s", user, channel, error)

    async def _feedback_reacted(self, reacted: Reacted) -> None:
        await asyncio.to_thread(self._feedback, reacted.reply, reacted.episode_id,
                                reacted.name, reacted.user, reacted.added)

    def _feedback(
        self, reply: ReplyRecord, episode_id: str, name: str, user: str, added: bool
    ) -> None:
        """Each person's ✅ / ❌ counts once; the episode shows what the reactions add up to.

        Any ❌ standing makes it "did not work" (a failure report outweighs praise),
        else any ✅ makes it "worked", else no feedback.
        """
        if added:
            self._kit.keep_effect(reply, name, user, name)
        elif self._kit.pop_effect(reply, name, user) is None:
            return  # removing a reaction that never counted changes nothing
        self._apply_feedback(reply, episode_id)

    def _apply_feedback(self, reply: ReplyRecord, episode_id: str) -> None:
        standing = self._effects(reply, (WORKED, DID_NOT_WORK))
        if DID_NOT_WORK in standing:
            feedback = Feedback.DID_NOT_WORK
        elif WORKED in standing:
            feedback = Feedback.WORKED
        else:
            feedback = Feedback.NONE
        self._parts.episodic.set_feedback(episode_id, feedback)

    def _effects(self, reply: ReplyRecord, reactions: tuple[str, ...]) -> set[str]:
        return self._parts.effects.standing(reply.channel, reply.ts, reactions, clicks=BUTTON)
