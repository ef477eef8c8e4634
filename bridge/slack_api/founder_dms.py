"""Direct messages to the founders (persona observations are never applied on their own)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bridge.slack_api.escaping import escaped_pieces

log = logging.getLogger(__name__)


def dm_founders(client: WebClient, founders: Sequence[str], text: str) -> int:
    """DM ``text`` to each founder (a user id as the channel opens the DM); returns how many."""
    sent = 0
    for founder in founders:
        try:
            for piece in escaped_pieces(text):
                client.chat_postMessage(channel=founder, markdown_text=piece)
            sent += 1
        except SlackApiError as error:
            # One founder's closed DMs must not keep the others from hearing it.
            log.warning("could not DM founder %s: %s", founder, error.response.get("error"))
    return sent
