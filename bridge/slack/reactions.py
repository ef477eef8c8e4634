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

import logging
from collections.abc import Callable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.console_links import ConsoleLinks
from bridge.pipeline.keyed_locks import KeyedLocks
from bridge.slack.feedback import HELPFUL, NOT_HELPFUL
from bridge.slack.replies import ReplyRecord
from bridge.slack.reply_reactions import Kit, Reacted, ReplyReaction, keep_effect, pop_effect
from bridge.slack.reply_reactions.about_me import about_me
from bridge.slack.reply_reactions.forget import forget_exchange_reaction
from bridge.slack.reply_reactions.propose_note import propose_note
from bridge.slack.stores import SlackStores
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import Directory
from bridge.slack_api.escaping import escape
from bridge.slack_api.note_cards import decided, note_card_message
from bridge.slack_api.skill_cards import show_outcome
from bridge.slack_api.workspace_client import bot_user
from layers.episodic.episode import Feedback
from layers.identity.protocol import IdentityBackend
from layers.procedural.drafts import Draft
from layers.shared.audit import slack_actor
from layers.shared.errors import ThothError
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

WORKED, DID_NOT_WORK = "white_check_mark", "x"
# What a reaction on a reply does, by its emoji (bridge/slack/reply_reactions/); ✅ / ❌
# are this module's own, since the feedback buttons count with them.
REPLY_REACTIONS: tuple[Callable[[Kit], ReplyReaction], ...] = (
    propose_note, forget_exchange_reaction, about_me,
)
# A feedback-button click, kept beside the reactions; its effect is WORKED or DID_NOT_WORK.
BUTTON = "feedback_button"
BUTTON_EFFECTS = {HELPFUL: WORKED, NOT_HELPFUL: DID_NOT_WORK}


class Reactions:
    def __init__(
        self,
        stores: Offloaded[SlackStores],
        identity: IdentityBackend | None,
        client: AsyncWebClient,
        directory: Directory,
        *,
        founders: frozenset[str],
        bot_user: str | None,
        console: ConsoleLinks | None = None,
    ) -> None:
        """``founders`` may approve skill drafts and memory notes (FOUNDER_USER_IDS);
        ``console`` links cards to the console."""
        self._stores = stores
        self._console = console
        self._founders = founders
        self._client = client
        self._directory = directory
        self._bot_user = bot_user
        self._per_message = KeyedLocks()
        kit = Kit(stores, identity, founders, client, directory, self._tell, console)
        # What a reaction's handler may use; the message shortcuts use it too.
        self.kit = kit
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
        if not user or user == bot_user(self._bot_user) or item.get("type") != "message":
            return
        if (await self._directory.user(user)).is_bot:
            return
        note_id = await self._stores.run(lambda stores: stores.note_cards.find(channel, ts))
        if note_id is not None:
            if added and name in (WORKED, DID_NOT_WORK):
                await self._decide_note(note_id, keep=name == WORKED, user=user,
                                        channel=channel, ts=ts, thread_ts=item.get("thread_ts"))
            return
        card = await self._stores.run(lambda stores: stores.cards.find(channel, ts))
        if card is not None:
            if added and name in (WORKED, DID_NOT_WORK):
                await self.decide(
                    card.draft_id, approve=name == WORKED, user=user, channel=channel, ts=ts,
                    thread_ts=card.thread_ts,
                )
            return
        reply = await self._stores.run(lambda stores: stores.replies.find(channel, ts))
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
        if user not in self._founders:
            await self._tell(user, channel, thread_ts, messages.NOT_A_FOUNDER)
            return
        def change(stores: SlackStores) -> Draft:
            draft = (stores.drafts.approve if approve else stores.drafts.reject)(draft_id, by=user)
            stores.audit.record(actor=slack_actor(user),
                                action="skill.approve" if approve else "skill.reject",
                                target=f"draft:{draft_id}", origin="slack")
            return draft

        try:
            draft = await self._stores.run(change)
        except ThothError as error:
            await self._tell(user, channel, thread_ts, f"Sorry: {error}")
            return
        await show_outcome(self._client, draft, channel=channel, ts=ts, console=self._console)

    async def _decide_note(
        self, note_id: str, *, keep: bool, user: str, channel: str, ts: str,
        thread_ts: str | None,
    ) -> None:
        """Keep or reject a memory note from its card: a founder's ✅ or ❌."""
        if user not in self._founders:
            await self._tell(user, channel, thread_ts, messages.NOT_A_FOUNDER_NOTES)
            return
        try:
            note = await self._stores.run(lambda stores: decided(
                stores, note_id, keep=keep, by=user, actor=slack_actor(user), origin="slack"))
        except ThothError as error:
            await self._tell(user, channel, thread_ts, f"Sorry: {error}")
            return
        await self._client.chat_update(channel=channel, ts=ts,
                                       **note_card_message(note, self._console))

    async def feedback_clicked(self, *, channel: str, ts: str, user: str, value: str) -> None:
        """A feedback button under a reply: the same as that person's ✅ / ❌, undone by a
        second click on the same button."""
        effect = BUTTON_EFFECTS.get(value)
        if effect is None:
            return
        async with self._per_message.hold(f"{channel}:{ts}"):
            reply = await self._stores.run(lambda stores: stores.replies.find(channel, ts))
            if reply is None or not reply.episode_id:
                return
            clicked, episode_id = reply, reply.episode_id
            taken_back = await self._stores.run(
                lambda stores: _click(stores, clicked, episode_id, user, effect))
        text = messages.FEEDBACK_TAKEN_BACK if taken_back else messages.FEEDBACK_THANKS
        await self._tell(user, channel, reply.thread_ts, text)

    async def _tell(self, user: str, channel: str, thread_ts: str | None, text: str) -> None:
        """An ephemeral note to one person, in the thread it is about."""
        try:
            await self._client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread_ts, markdown_text=escape(text)
            )
        except SLACK_FAILURES as error:
            log.warning("could not tell %s in %s: %s", user, channel, error)

    async def _feedback_reacted(self, reacted: Reacted) -> None:
        await self._stores.run(lambda stores: _feedback(
            stores, reacted.reply, reacted.episode_id, reacted.name, reacted.user,
            reacted.added))


def _click(stores: SlackStores, reply: ReplyRecord, episode_id: str, user: str,
           effect: str) -> bool:
    previous = pop_effect(stores, reply, BUTTON, user)
    if previous != effect:
        keep_effect(stores, reply, BUTTON, user, effect)
    _apply_feedback(stores, reply, episode_id)
    return previous == effect


def _feedback(
    stores: SlackStores, reply: ReplyRecord, episode_id: str, name: str, user: str,
    added: bool,
) -> None:
    """Each person's ✅ / ❌ counts once; the episode shows what the reactions add up to.

    Any ❌ standing makes it "did not work" (a failure report outweighs praise),
    else any ✅ makes it "worked", else no feedback.
    """
    if added:
        keep_effect(stores, reply, name, user, name)
    elif pop_effect(stores, reply, name, user) is None:
        return  # removing a reaction that never counted changes nothing
    _apply_feedback(stores, reply, episode_id)


def _apply_feedback(stores: SlackStores, reply: ReplyRecord, episode_id: str) -> None:
    standing = stores.effects.standing(reply.channel, reply.ts, (WORKED, DID_NOT_WORK),
                                       clicks=BUTTON)
    if DID_NOT_WORK in standing:
        feedback = Feedback.DID_NOT_WORK
    elif WORKED in standing:
        feedback = Feedback.WORKED
    else:
        feedback = Feedback.NONE
    stores.episodic.set_feedback(episode_id, feedback)
