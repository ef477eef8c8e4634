"""Reflection's results in Slack: approval cards in the thread, DMs to founders.

Run by the reflection child, a batch process: the sync client is right here.

A card is posted once, even when Slack fails while it is posted: the same rule as a
reply's (``sure_posts.py``), for a process with no loop. The SDK does not send
``chat.postMessage`` again by itself (``clients.py``), so a card whose post failed in a
way that may have landed is looked for by its mark (message metadata: ``thoth_card`` and
the card's draft or note) before it is posted again, a few times with backoff. Past them
the failure is raised: the draft or note is in the database and the console either way,
only its card is missing.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bridge.console_links import ConsoleLinks
from bridge.slack_api.escaping import escaped_pieces
from bridge.slack_api.founder_dms import dm_founders
from bridge.slack_api.note_cards import NOTE_CARD_REACTIONS, NoteCardStore, note_card_message
from bridge.slack_api.skill_cards import CARD_REACTIONS, CardStore, card_message
from bridge.slack_api.sure_posts import error_code, may_have_landed, passing
from layers.notes.store import Note
from layers.procedural.drafts import Draft
from layers.shared.backoff import backoff_delay
from layers.shared.places import Place
from layers.shared.storage.database import Database

log = logging.getLogger(__name__)

CARD_EVENT = "thoth_card"
TRIES = 4
BASE_S = 1.0
MAX_S = 8.0
# Where a card without a thread is looked for: the newest messages of the channel.
HISTORY_LIMIT = 100


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
        ts, channel = post_card_once(self._client, channel=channel, thread_ts=thread_ts,
                                     mark=card_mark("skill_draft", draft.id),
                                     **card_message(draft, self._console))
        self._cards.record(draft.id, channel=channel, ts=ts, thread_ts=thread_ts,
                           team=self._team)
        for name in CARD_REACTIONS:
            self._client.reactions_add(channel=channel, timestamp=ts, name=name)
        return ts

    def note_card(self, note: Note, place: Place) -> None:
        """Post the note's card in the session's thread, ✅ / ❌ pre-added."""
        ts, channel = post_card_once(self._client, channel=place.channel,
                                     thread_ts=place.thread_ts, mark=card_mark("note", note.id),
                                     **note_card_message(note, self._console))
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


def card_mark(kind: str, ident: str) -> dict[str, Any]:
    """The metadata of the card of ``kind`` ("skill_draft", "note") ``ident``."""
    return {"event_type": CARD_EVENT, "event_payload": {"kind": kind, "id": ident}}


def post_card_once(client: WebClient, *, channel: str, thread_ts: str | None,
                   mark: dict[str, Any], **content: Any) -> tuple[str, str]:
    """The card posted (or found, posted by a try whose answer was lost): its (ts,
    channel)."""
    unsure = False
    for attempt in range(1, TRIES + 1):
        try:
            if unsure:
                found = _find(client, channel, thread_ts, mark)
                if found is not None:
                    log.info("a card in %s had reached Slack after all", channel)
                    return found, channel
            response = client.chat_postMessage(channel=channel, thread_ts=thread_ts,
                                               metadata=mark, **content)
            # Posted to a user id, it is in that person's DM: Slack answers with the DM's
            # own channel id, which reactions on it will name.
            return str(response["ts"]), str(response.get("channel") or channel)
        except (SlackApiError, OSError) as error:
            if not passing(error) or attempt == TRIES:
                raise
            unsure = unsure or may_have_landed(error)
            log.warning("posting a card in %s failed (%s); trying again", channel,
                        error_code(error) if isinstance(error, SlackApiError)
                        else type(error).__name__)
            time.sleep(backoff_delay(attempt, base_s=BASE_S, max_s=MAX_S))
    raise AssertionError("unreachable")


def _find(client: WebClient, channel: str, thread_ts: str | None,
          mark: dict[str, Any]) -> str | None:
    try:
        if thread_ts:
            response = client.conversations_replies(channel=channel, ts=thread_ts,
                                                    include_all_metadata=True, limit=200)
        else:
            response = client.conversations_history(channel=channel, limit=HISTORY_LIMIT,
                                                    include_all_metadata=True)
    except SlackApiError as error:
        if passing(error):
            raise
        return None  # the channel cannot be read: posted again (a possible double)
    for message in response.get("messages") or []:
        metadata = message.get("metadata") or {}
        if (metadata.get("event_type") == mark["event_type"]
                and metadata.get("event_payload") == mark["event_payload"]):
            return str(message["ts"])
    return None
