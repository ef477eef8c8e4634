"""Reflection's results in Slack: approval cards in the thread, DMs to founders.

Run by the reflection child, a batch process: the sync client is right here.
"""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.web import SlackResponse

from bridge.console_links import ConsoleLinks
from bridge.slack_api.escaping import escaped_pieces
from bridge.slack_api.founder_dms import dm_founders
from bridge.slack_api.note_cards import NOTE_CARD_REACTIONS, NoteCardStore, note_card_message
from bridge.slack_api.skill_cards import CARD_REACTIONS, CardStore, card_message
from layers.notes.store import Note
from layers.procedural.drafts import Draft
from layers.shared.places import Place
from layers.shared.storage.database import Database


class SlackNotifier:
    def __init__(self, client: WebClient, db: Database, console: ConsoleLinks | None, *,
                 team: str | None = None) -> None:
        """``team``: installed into many workspaces, the one ``client``'s token is for."""
        self._client = client
        self._team = team
        self._console = console
        self._cards = CardStore(db)
        self._note_cards = NoteCardStore(db)

    def skill_card(self, draft: Draft, place: Place) -> None:
        self.post_card(draft, channel=place.channel, thread_ts=place.thread_ts)

    def post_card(self, draft: Draft, *, channel: str, thread_ts: str | None) -> str:
        """Post the card (in the session's thread) and pre-add the approve/reject reactions."""
        response = self._client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, **card_message(draft, self._console)
        )
        ts, channel = str(response["ts"]), _posted_in(response, channel)
        self._cards.record(draft.id, channel=channel, ts=ts, thread_ts=thread_ts,
                           team=self._team)
        for name in CARD_REACTIONS:
            self._client.reactions_add(channel=channel, timestamp=ts, name=name)
        return ts

    def note_card(self, note: Note, place: Place) -> None:
        """Post the note's card in the session's thread, ✅ / ❌ pre-added."""
        response = self._client.chat_postMessage(
            channel=place.channel, thread_ts=place.thread_ts,
            **note_card_message(note, self._console),
        )
        ts, channel = str(response["ts"]), _posted_in(response, place.channel)
        self._note_cards.record(note.id, channel=channel, ts=ts)
        for name in NOTE_CARD_REACTIONS:
            self._client.reactions_add(channel=channel, timestamp=ts, name=name)

    def dm_founder(self, founder: str, text: str) -> None:
        if not dm_founders(self._client, [founder], text):
            raise RuntimeError(f"could not DM founder {founder}")

    def summary(self, place: Place, text: str) -> None:
        for piece in escaped_pieces(text):
            self._client.chat_postMessage(
                channel=place.channel, thread_ts=place.thread_ts, markdown_text=piece
            )


def _posted_in(response: SlackResponse, asked: str) -> str:
    """The channel a message went to. Posted to a user id, it is in that person's DM:
    Slack answers with the DM's own channel id, which reactions on it will name."""
    return str(response.get("channel") or asked)
