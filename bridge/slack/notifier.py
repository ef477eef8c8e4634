"""Reflection's results in Slack: approval cards in the thread, DMs to founders."""

from __future__ import annotations

from slack_sdk import WebClient

from bridge.slack.cards import SkillCards
from bridge.slack.escaping import escaped_pieces
from bridge.slack.founders import dm_founders
from layers.procedural.drafts import Draft
from layers.storage.database import Database
from layers.working.sessions import Place


class SlackNotifier:
    def __init__(self, client: WebClient, db: Database) -> None:
        self._client = client
        self._cards = SkillCards(db, client)

    def skill_card(self, draft: Draft, place: Place) -> None:
        self._cards.post(draft, channel=place.channel, thread_ts=place.thread_ts)

    def dm_founder(self, founder: str, text: str) -> None:
        if not dm_founders(self._client, [founder], text):
            raise RuntimeError(f"could not DM founder {founder}")

    def summary(self, place: Place, text: str) -> None:
        for piece in escaped_pieces(text):
            self._client.chat_postMessage(
                channel=place.channel, thread_ts=place.thread_ts, markdown_text=piece
            )
