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
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.pipeline.keyed_locks import KeyedLocks
from bridge.slack.cards import CardStore, show_outcome
from bridge.slack.directory import Directory
from bridge.slack.escaping import escape
from bridge.slack.feedback import HELPFUL, NOT_HELPFUL
from bridge.slack.note_cards import NOTE_CARD_REACTIONS, NoteCardStore, note_card_message
from bridge.slack.reaction_effects import ReactionEffects
from bridge.slack.replies import ReplyRecord, SlackReplies
from bridge.slack.web import SLACK_FAILURES
from layers.episodic.episode import Feedback
from layers.episodic.memory import EpisodicMemory
from layers.errors import ThothError
from layers.identity.protocol import IdentityBackend, Person
from layers.identity.tombstones import Tombstones
from layers.notes.governance import NoteGovernance
from layers.notes.store import Note
from layers.places import Place
from layers.procedural.drafts import SkillDrafts
from layers.working.transcript import TranscriptStore

log = logging.getLogger(__name__)

WORKED, DID_NOT_WORK = "white_check_mark", "x"
BRAIN, WASTEBASKET, BUST = "brain", "wastebasket", "bust_in_silhouette"
# A feedback-button click, kept beside the reactions; its effect is WORKED or DID_NOT_WORK.
BUTTON = "feedback_button"
BUTTON_EFFECTS = {HELPFUL: WORKED, NOT_HELPFUL: DID_NOT_WORK}


@dataclass(frozen=True)
class ReactionParts:
    """What reactions act on (built once, in ``bolt_app.build_bridge``)."""

    episodic: EpisodicMemory
    transcript: TranscriptStore
    notes: NoteGovernance
    drafts: SkillDrafts
    identity: IdentityBackend | None
    effects: ReactionEffects
    # Who asked to be forgotten: nothing they said before it is learned again.
    tombstones: Tombstones
    # Who may approve a skill draft (FOUNDER_USER_IDS).
    founders: frozenset[str]


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
        if name == BUST:
            await self._bust(reply, reply.episode_id, user, added)
        else:
            await self._on_reply(reply, reply.episode_id, name, user, added)

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

    async def _post_note_card(self, note: Note, channel: str, thread_ts: str | None) -> None:
        try:
            response = await self._client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, **note_card_message(note)
            )
            ts = str(response["ts"])
            await asyncio.to_thread(self._note_cards.record, note.id, channel=channel, ts=ts)
            for name in NOTE_CARD_REACTIONS:
                await self._client.reactions_add(channel=channel, timestamp=ts, name=name)
        except SLACK_FAILURES as error:
            # The note waits all the same: `thoth notes list` shows it to the operator.
            log.warning("could not post the card of note %s: %s", note.id, error)

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
        previous = self._pop_effect(reply, BUTTON, user)
        if previous != effect:
            self._keep_effect(reply, BUTTON, user, effect)
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

    async def _on_reply(
        self, reply: ReplyRecord, episode_id: str, name: str, user: str, added: bool
    ) -> None:
        if name in (WORKED, DID_NOT_WORK):
            await asyncio.to_thread(self._feedback, reply, episode_id, name, user, added)
        elif name in (BRAIN, WASTEBASKET) and user != reply.asker:
            # Saving or deleting an exchange is the asker's call: it may hold their words
            # from a DM or a private channel.
            if added:
                await self._tell(user, reply.channel, reply.thread_ts, messages.ASKER_ONLY)
        elif name == BRAIN:
            await self._brain(reply, episode_id, user, added)
        elif name == WASTEBASKET and added and await asyncio.to_thread(
            self._forget_everywhere, episode_id, user
        ):
            await self._client.chat_postMessage(
                channel=reply.channel, thread_ts=reply.thread_ts,
                markdown_text=escape(messages.FORGOTTEN),
            )

    def _feedback(
        self, reply: ReplyRecord, episode_id: str, name: str, user: str, added: bool
    ) -> None:
        """Each person's ✅ / ❌ counts once; the episode shows what the reactions add up to.

        Any ❌ standing makes it "did not work" (a failure report outweighs praise),
        else any ✅ makes it "worked", else no feedback.
        """
        if added:
            self._keep_effect(reply, name, user, name)
        elif self._pop_effect(reply, name, user) is None:
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

    async def _brain(self, reply: ReplyRecord, episode_id: str, user: str, added: bool) -> None:
        who = (await self._directory.user(user)).name or user
        if not added:
            await asyncio.to_thread(self._unkeep_note, reply, user, who)
            return
        episode = await asyncio.to_thread(self._parts.episodic.store.get, episode_id)
        if episode is None:
            return
        channel = await self._directory.channel(reply.channel)
        # The note belongs where the exchange was said, and reaches prompts only there.
        place = Place(episode.team, episode.channel, episode.channel_type, episode.thread_ts,
                      channel.name)
        said = episode.user_text + (f" → {episode.summary}" if episode.summary else "")
        note = await asyncio.to_thread(
            self._parts.notes.propose, said, place, user=user, author_name=who,
            source="🧠 reaction", session_id=reply.session_id, speakers=[user],
        )
        await asyncio.to_thread(self._keep_effect, reply, BRAIN, user, note.id)
        if note.status == "proposed":
            await self._post_note_card(note, reply.channel, reply.thread_ts)

    def _forget_everywhere(self, episode_id: str, user: str) -> bool:
        """The exchange, wherever Thoth kept it: the episode (text and vector), its turn in
        the transcript (so it is neither replayed nor reflected on), and the notes still
        waiting that reflection drew from its session."""
        episode = self._parts.episodic.store.get(episode_id)
        if episode is None or not self._parts.episodic.forget(episode_id):
            return False
        if episode.session_id:
            self._parts.transcript.forget_turn(
                episode.session_id, episode.created_at, episode.user_text
            )
            self._parts.notes.reject_pending_of(
                episode.session_id, by=f"{user} (🗑️ forgot the exchange)"
            )
        return True

    def _unkeep_note(self, reply: ReplyRecord, user: str, who: str) -> None:
        note_id = self._pop_effect(reply, BRAIN, user)
        # The same note may stand for another 🧠 (the same question answered twice).
        if note_id and not self._note_still_wanted(note_id):
            self._parts.notes.withdraw(note_id, by=who, why="🧠 reaction removed")

    async def _bust(self, reply: ReplyRecord, episode_id: str, user: str, added: bool) -> None:
        identity = self._parts.identity
        if identity is None or user != reply.asker:
            return
        info = await self._directory.user(user)
        person = Person(reply.team, user, info.name)
        if not added:
            kept = await asyncio.to_thread(self._pop_effect, reply, BUST, user)
            if kept:
                await identity.forget(person, kept)
            return
        episode = await asyncio.to_thread(self._parts.episodic.store.get, episode_id)
        if episode is None:
            return
        if await asyncio.to_thread(
            self._parts.tombstones.said_before_forget, person, episode.created_at
        ):
            return  # asked before they asked to be forgotten
        text = f"marked as about them the answer to: {episode.user_text[:160]}"
        made = await identity.observe(
            person, [text], session_id=reply.session_id, source="👤 reaction"
        )
        # Only the fact this reaction made is undone by removing it (a duplicate makes none).
        for fact_id in made[:1]:
            await asyncio.to_thread(self._keep_effect, reply, BUST, user, fact_id)

    def _keep_effect(self, reply: ReplyRecord, reaction: str, user: str, effect: str) -> None:
        self._parts.effects.keep(reply.channel, reply.ts, reaction, user, effect)

    def _effects(self, reply: ReplyRecord, reactions: tuple[str, ...]) -> set[str]:
        return self._parts.effects.standing(reply.channel, reply.ts, reactions, clicks=BUTTON)

    def _note_still_wanted(self, note_id: str) -> bool:
        """Whether another 🧠 still stands for the same note."""
        return self._parts.effects.any_with(BRAIN, note_id)

    def _pop_effect(self, reply: ReplyRecord, reaction: str, user: str) -> str | None:
        return self._parts.effects.pop(reply.channel, reply.ts, reaction, user)
