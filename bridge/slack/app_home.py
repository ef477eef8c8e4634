"""The App Home tab: what Thoth knows about the person looking, and what waits for a
founder — the console's own page and inbox, inside Slack (``views.publish``).

Published when the person opens the tab (``app_home_opened``, tab "home") and again after
each change made from it: a fact forgotten, everything forgotten (with Slack's own
confirmation dialog), a memory note kept or rejected. A note decided here shows so on its
cards, as one decided on a card shows so here the next time the tab opens.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge.console_links import ConsoleLinks
from bridge.forget_person import PersonForgetting
from bridge.slack.stores import SlackStores
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.escaping import escape
from bridge.slack_api.note_cards import decided, show_on_cards
from layers.identity.known_as import facts_of, known_as
from layers.identity.protocol import IdentityBackend, Person
from layers.notes.store import Note
from layers.shared.audit import slack_actor
from layers.shared.offloaded import Offloaded
from layers.shared.places import Viewer

log = logging.getLogger(__name__)

FORGET_FACT = "home_forget_fact"
FORGET_EVERYTHING = "home_forget_everything"
# Slack's confirmation dialog (its text: 300 characters at most).
FORGET_EVERYTHING_SAYS = (
    "Deleted for good: what Thoth knows about you, your DMs with Thoth and your memory"
    " notes. What you said in channels stays: it is part of conversations other people"
    " took part in.")
KEEP_NOTE = "home_note_keep"
REJECT_NOTE = "home_note_reject"
# A Home view holds at most 100 blocks: the newest of each list, the rest in the console.
FACTS_SHOWN = 20
RECENT_SHOWN = 5
NOTES_SHOWN = 10


class AppHome:
    def __init__(
        self, stores: Offloaded[SlackStores], identity: IdentityBackend | None,
        client: AsyncWebClient, *, founders: frozenset[str], console: ConsoleLinks | None,
        forgetting: PersonForgetting,
    ) -> None:
        """``forgetting``: "forget me", as every surface does it."""
        self._stores = stores
        self._identity = identity
        self._forgetting = forgetting
        self._client = client
        self._founders = founders
        self._console = console

    async def publish(self, team: str, user: str, *, org: str | None = None) -> None:
        """Build and publish this person's Home tab; a refusal is logged, never raised.
        ``org``: their Enterprise Grid org, whose key they are also known under."""
        facts = (await facts_of(self._identity, known_as(Person(team, user), org), None)
                 if self._identity is not None else [])
        viewer = Viewer(team, "home", "im", user)

        def read(stores: SlackStores) -> tuple[list[Any], list[Note]]:
            recent = stores.recent_episodes.recent_asked_by(user, viewer, RECENT_SHOWN) if (
                stores.recent_episodes is not None) else []
            waiting = stores.notes.store.listed("proposed")[:NOTES_SHOWN] if (
                user in self._founders) else []
            return recent, waiting

        recent, waiting = await self._stores.run(read)
        blocks = [*_about_you(facts[:FACTS_SHOWN], self._identity is not None),
                  *_recent(recent)]
        if user in self._founders:
            blocks += _waiting(waiting)
        if self._console is not None:
            blocks.append(_context(f"Everything, and its history: {self._console.home}"))
        try:
            await self._client.views_publish(user_id=user,
                                             view={"type": "home", "blocks": blocks})
        except SLACK_FAILURES as error:
            log.warning("the Home tab of %s was not published: %s", user, error)

    async def forget_fact(self, team: str, user: str, fact_id: str, *,
                          org: str | None = None) -> None:
        await self._forgetting.forget_fact(known_as(Person(team, user), org), fact_id,
                                           actor=slack_actor(user), origin="slack home")
        await self.publish(team, user, org=org)

    async def forget_everything(self, team: str, user: str, *, org: str | None = None) -> None:
        await self._forgetting.forget(known_as(Person(team, user), org),
                                      actor=slack_actor(user), origin="slack home")
        await self.publish(team, user, org=org)

    async def decide_note(self, team: str, user: str, note_id: str, *, keep: bool) -> None:
        if user not in self._founders:
            # The buttons are only on founders' tabs: anyone else's click decides nothing,
            # and their tab is shown afresh.
            await self.publish(team, user)
            return

        def change(stores: SlackStores) -> tuple[Note, list[tuple[str, str]]]:
            note = decided(stores, note_id, keep=keep, by=user, actor=slack_actor(user),
                           origin="slack home")
            return note, stores.note_cards.cards_of(note_id)

        try:
            note, cards = await self._stores.run(change)
        except Exception:
            log.exception("note %s could not be decided from the Home tab", note_id)
        else:
            # One state: its cards say it.
            await show_on_cards(self._client, note, cards, self._console)
        await self.publish(team, user)


def _about_you(facts: list[Any], identity_on: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [_header("What Thoth knows about you")]
    if not identity_on:
        blocks.append(_text("No facts: Thoth learns nothing about people here."))
    elif not facts:
        blocks.append(_text("No facts yet."))
    for fact in facts:
        blocks.append({
            "type": "section", "text": {"type": "mrkdwn", "text": escape(fact.text)},
            "accessory": {"type": "button", "action_id": FORGET_FACT, "value": fact.id,
                          "text": {"type": "plain_text", "text": "Forget"}},
        })
    # Always offered: their DMs with Thoth and their notes are theirs to forget, facts or
    # none (bridge/forget_person.py).
    blocks.append({"type": "actions", "elements": [{
        "type": "button", "action_id": FORGET_EVERYTHING, "style": "danger",
        "text": {"type": "plain_text", "text": "Forget everything about me"},
        "confirm": {"title": {"type": "plain_text", "text": "Forget everything?"},
                    "text": {"type": "plain_text", "text": FORGET_EVERYTHING_SAYS},
                    "confirm": {"type": "plain_text", "text": "Forget it all"},
                    "deny": {"type": "plain_text", "text": "Keep it"}},
    }]})
    return blocks


def _recent(episodes: list[Any]) -> list[dict[str, Any]]:
    if not episodes:
        return []
    listed = "\n".join(f"• {escape(episode.user_text[:150])}" for episode in episodes)
    return [_header("What you asked lately"), _text(listed)]


def _waiting(notes: list[Note]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [_header("Memory notes waiting for a founder")]
    if not notes:
        return [*blocks, _text("None.")]
    for note in notes:
        blocks.append(_text(f"> {escape(note.text)}"))
        blocks.append({"type": "actions", "block_id": f"note-{note.id}", "elements": [
            {"type": "button", "action_id": KEEP_NOTE, "value": note.id, "style": "primary",
             "text": {"type": "plain_text", "text": "Keep"}},
            {"type": "button", "action_id": REJECT_NOTE, "value": note.id,
             "text": {"type": "plain_text", "text": "Reject"}},
        ]})
    return blocks


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


def _text(markdown: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": markdown}}


def _context(markdown: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": markdown}]}
