"""One state: a note or a draft decided in the console shows so on its cards in Slack,
as one decided there shows so here (they share the stores).

A card Slack will not update (deleted, the token gone) is logged; the decision stands.
"""

from __future__ import annotations

import logging

from bridge.console.parts import ConsoleParts
from bridge.slack.cards import show_outcome
from bridge.slack.note_cards import show_on_cards
from bridge.slack.web import SLACK_FAILURES
from bridge.slack.workspace_client import serving_team
from layers.notes.store import Note
from layers.procedural.drafts import Draft

log = logging.getLogger(__name__)


async def show_note_decided(parts: ConsoleParts, note: Note) -> None:
    if parts.slack is None:
        return
    cards = await parts.stores.run(lambda s: s.note_cards.cards_of(note.id))
    async with serving_team(parts.workspace_of, note.place.team) as installed:
        if installed:
            await show_on_cards(parts.slack, note, cards, parts.links)


async def show_draft_decided(parts: ConsoleParts, draft: Draft) -> None:
    """Decided: installed into many workspaces, a skill's cards are left as they are
    after a decision here (a card records no workspace to update it through); the
    decision stands all the same."""
    if parts.slack is None or parts.workspace_of is not None:
        return
    client = parts.slack
    for channel, ts in await parts.stores.run(lambda s: s.cards.cards_of(draft.id)):
        try:
            await show_outcome(client, draft, channel=channel, ts=ts, console=parts.links)
        except SLACK_FAILURES as error:
            log.warning("the card of draft %s in %s was not updated: %s", draft.id, channel,
                        error)
