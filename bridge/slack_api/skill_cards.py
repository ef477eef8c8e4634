"""Skill-draft approval cards: Block Kit with Approve / Reject, and ✅ / ❌ pre-added.

The reflection child posts a card (``notifier.py``, its sync client); ``thoth serve``
finds it again when someone clicks or reacts, and shows the outcome on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.console_links import ConsoleLinks
from bridge.slack_api.card_edits import edit_card
from bridge.slack_api.escaping import SECTION_CHARS, escape, mention, preview, split_message
from layers.procedural.drafts import Draft, DraftState
from layers.shared.storage.database import Database

APPROVE_ACTION = "skill_draft_approve"
REJECT_ACTION = "skill_draft_reject"
# A card shows the whole body, in as many code sections as it takes (a skill body is at
# most 20 000 characters: 8 sections of Slack's 50 blocks): approving installs exactly
# what the founder could read on the card, nothing unseen.
BODY_SECTION_CHARS = SECTION_CHARS - 8


@dataclass(frozen=True)
class Card:
    draft_id: str
    thread_ts: str | None


# Pre-added under each card: a reaction is one click for whoever decides.
CARD_REACTIONS = ("white_check_mark", "x")


class CardStore:
    """Which message is which draft's card (the ``slack_cards`` table)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, draft_id: str, *, channel: str, ts: str, thread_ts: str | None,
               team: str | None = None) -> None:
        """``team``: the workspace it was posted in (None with one bot token)."""
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO slack_cards (channel, ts, draft_id, thread_ts, team)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (channel, ts) DO UPDATE SET"
                " draft_id = excluded.draft_id, thread_ts = excluded.thread_ts,"
                " team = excluded.team",
                (channel, ts, draft_id, thread_ts, team),
            )

    def find(self, channel: str, ts: str) -> Card | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT draft_id, thread_ts FROM slack_cards WHERE channel = ? AND ts = ?",
                (channel, ts),
            ).fetchone()
        return None if row is None else Card(str(row[0]), row[1])

    def cards_of(self, draft_id: str) -> list[tuple[str, str, str | None]]:
        """Every card of the draft, as (channel, ts, the workspace it was posted in)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT channel, ts, team FROM slack_cards WHERE draft_id = ?", (draft_id,)
            ).fetchall()
        return [(str(channel), str(ts), None if team is None else str(team))
                for channel, ts, team in rows]



def card_message(draft: Draft, console: ConsoleLinks | None) -> dict[str, Any]:
    """A pending card's ``text`` (what notifications show) and ``blocks``."""
    text = escape(f"Skill draft {draft.slug} {draft.version} awaits approval")
    return {"text": text, "blocks": card_blocks(draft, console)}


async def show_outcome(client: AsyncWebClient, draft: Draft, *, channel: str, ts: str,
                       console: ConsoleLinks | None) -> None:
    """The card, edited to say who decided what; its buttons are gone. While Slack fails
    the edit, it is tried again in the background (``card_edits.py``): the decision is in
    the database either way."""
    await edit_card(client, channel=channel, ts=ts, what=f"skill draft {draft.id}",
                    text=outcome_text(draft), blocks=card_blocks(draft, console))


def outcome_text(draft: Draft) -> str:
    """The card's outcome as Slack text: the draft's words escaped, the decider mentioned."""
    verb = {
        DraftState.ACCEPTED: "approved",
        DraftState.REJECTED: "rejected",
        DraftState.EXPIRED: "expired",
        DraftState.PENDING: "awaits approval",
    }[draft.state]
    decided_by_person = draft.decided_by and draft.state is not DraftState.EXPIRED
    who = f" by {mention(draft.decided_by)}" if draft.decided_by and decided_by_person else ""
    return escape(f"Skill draft {draft.slug} {draft.version} {verb}") + who


def card_blocks(draft: Draft, console: ConsoleLinks | None) -> list[dict[str, Any]]:
    header = f"*Skill draft:* `{escape(draft.slug)}` {escape(draft.version)}"
    if draft.base_version:
        header += f" (new version of {escape(draft.base_version)})"
    summary = preview(f"{header}\n{escape(draft.description)}", SECTION_CHARS - 1)
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": summary}},
    ]
    if draft.body.strip():
        blocks.extend(
            {"type": "section", "text": {"type": "mrkdwn", "text": f"```{piece}```"}}
            for piece in split_message(escape(draft.body), BODY_SECTION_CHARS)
        )
    if draft.allowed_tools:
        # Approving the skill approves these: they run without asking while it is in use.
        tools = ", ".join(f"`{escape(tool)}`" for tool in draft.allowed_tools)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": preview(
            f"*Runs without asking, while this skill is in use:* {tools}",
            SECTION_CHARS - 1)}})
    if draft.state is DraftState.PENDING:
        blocks.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "action_id": APPROVE_ACTION,
                        "style": "primary",
                        "text": {"type": "plain_text", "text": messages.APPROVE},
                        "value": draft.id,
                    },
                    {
                        "type": "button",
                        "action_id": REJECT_ACTION,
                        "style": "danger",
                        "text": {"type": "plain_text", "text": messages.REJECT},
                        "value": draft.id,
                    },
                ],
            }
        )
        blocks.append(
            {
                "type": "context",
                "elements": [
                    {"type": "mrkdwn", "text": messages.CARD_HINT}
                ],
            }
        )
    else:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": outcome_text(draft)}]}
        )
    if console is not None:
        # In the closing context block: the card's block count stays what it was.
        blocks[-1]["elements"].append(
            {"type": "mrkdwn", "text": f"<{console.skills()}|Drafts and history in the console>"})
    return blocks
