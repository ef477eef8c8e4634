"""The Slack cards of what a person proposes over MCP, for a founder's ✅ or ❌.

A note's card goes where the note was proposed, as a 🧠 card does: in the channel, or in
the person's DM with Thoth. A skill draft is the whole team's procedure and has no
conversation of its own: its card goes to each founder's DM with Thoth, and the first
founder's decision holds (the cards of a draft are one draft's). Without a Slack token
there are no cards: the console and `thoth notes|skills approve` decide.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.mcp.asker import Asker
from layers.notes.store import Note
from layers.procedural.drafts import Draft
from layers.shared.places import Place

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from bridge.slack_api.notifier import SlackNotifier


@dataclass(frozen=True)
class Cards:
    """``notifier_of``: Slack's for a workspace (installed into many, through its own
    install), None where Slack is not configured for it."""

    notifier_of: Callable[[str], SlackNotifier | None]
    founders: Sequence[str]

    def note_card(self, note: Note, asker: Asker) -> bool:
        """Whether the note's card was posted."""
        notifier = self._notifier(asker)
        if notifier is None:
            return False
        place = note.place
        # A user id as the channel opens the person's DM with Thoth (Slack's own rule).
        channel = asker.user if place.channel_type == "im" else place.channel
        return _posted(f"note {note.id}", lambda: notifier.note_card(
            note, Place(place.team, channel, place.channel_type, None)))

    def skill_card(self, draft: Draft, asker: Asker) -> int:
        """The draft's card in each founder's DM; how many were posted."""
        notifier = self._notifier(asker)
        if notifier is None:
            return 0
        posted = 0
        for founder in self.founders:
            posted += _posted(f"skill draft {draft.id}", functools.partial(
                notifier.post_card, draft, channel=founder, thread_ts=None))
        return posted

    def _notifier(self, asker: Asker) -> SlackNotifier | None:
        """None for the terminal's own user: no Slack place is theirs."""
        return None if asker.local else self.notifier_of(asker.team)


def _posted(what: str, post: Callable[[], object]) -> bool:
    """Post a card; a card Slack refuses leaves what it shows waiting, not lost."""
    from slack_sdk.errors import SlackApiError

    try:
        post()
    except (SlackApiError, OSError) as error:
        log.warning("could not post the card of %s in Slack (%s): it waits in the console",
                    what, error)
        return False
    return True
