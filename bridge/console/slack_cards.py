"""One state: a note or a draft decided in the console shows so on its cards in Slack,
as one decided there shows so here (they share the stores).

A card Slack will not update (deleted, the token gone) is logged; the decision stands.
"""

from __future__ import annotations

import logging

from bridge.console.dependencies import ConsoleDependencies
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.note_cards import show_on_cards
from bridge.slack_api.skill_cards import show_outcome
from bridge.slack_api.workspace_client import serving_team
from layers.notes.store import Note
from layers.procedural.drafts import Draft

log = logging.getLogger(__name__)


async def show_note_decided(parts: ConsoleDependencies, note: Note) -> None:
    if parts.slack is None:
        return
    cards = await parts.stores.run(lambda s: s.note_cards.cards_of(note.id))
    async with serving_team(parts.workspace_of, note.place.team) as installed:
        if installed:
            await show_on_cards(parts.slack, note, cards, parts.links)


async def show_draft_decided(parts: ConsoleDependencies, draft: Draft) -> None:
    """Installed into many workspaces, each card is updated with the token of the
    workspace it was posted in; a card posted before that was recorded (no workspace) is
    left as it is. The decision stands all the same."""
    if parts.slack is None:
        return
    client = parts.slack
    for channel, ts, team in await parts.stores.run(lambda s: s.cards.cards_of(draft.id)):
        if parts.workspace_of is not None and team is None:
            log.info("the card of draft %s in %s records no workspace: left as it is",
                     draft.id, channel)
            continue
        async with serving_team(parts.workspace_of, team or "") as installed:
            if not installed:
                continue
            try:
                await show_outcome(client, draft, channel=channel, ts=ts,
                                   console=parts.links)
            except SLACK_FAILURES as error:
                log.warning("the card of draft %s in %s was not updated: %s", draft.id,
                            channel, error)
