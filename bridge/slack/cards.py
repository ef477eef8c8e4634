"""Skill-draft approval cards: Block Kit with Approve / Reject, and ✅ / ❌ pre-added."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient

from bridge import messages
from bridge.slack.escaping import SECTION_CHARS, escape, mention, preview
from layers.procedural.drafts import Draft, DraftState
from layers.storage.database import Database

APPROVE_ACTION = "skill_draft_approve"
REJECT_ACTION = "skill_draft_reject"
BODY_PREVIEW_CHARS = 1_500


@dataclass(frozen=True)
class Card:
    draft_id: str
    thread_ts: str | None


class SkillCards:
    def __init__(self, db: Database, client: WebClient) -> None:
        self._db = db
        self._client = client

    def post(self, draft: Draft, *, channel: str, thread_ts: str | None) -> str:
        """Post the card (in the session's thread) and pre-add the approve/reject reactions."""
        response = self._client.chat_postMessage(
            channel=channel,
            thread_ts=thread_ts,
            text=escape(f"Skill draft {draft.slug} {draft.version} awaits approval"),
            blocks=card_blocks(draft),
        )
        ts = str(response["ts"])
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO slack_cards (channel, ts, draft_id, thread_ts)"
                " VALUES (?, ?, ?, ?)",
                (channel, ts, draft.id, thread_ts),
            )
        for name in ("white_check_mark", "x"):
            self._client.reactions_add(channel=channel, timestamp=ts, name=name)
        return ts

    def find(self, channel: str, ts: str) -> Card | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT draft_id, thread_ts FROM slack_cards WHERE channel = ? AND ts = ?",
                (channel, ts),
            ).fetchone()
        return None if row is None else Card(str(row[0]), row[1])

    def show_outcome(self, draft: Draft, *, channel: str, ts: str) -> None:
        self._client.chat_update(
            channel=channel,
            ts=ts,
            text=outcome_text(draft),
            blocks=card_blocks(draft),
        )


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


def card_blocks(draft: Draft) -> list[dict[str, Any]]:
    header = f"*Skill draft:* `{escape(draft.slug)}` {escape(draft.version)}"
    if draft.base_version:
        header += f" (new version of {escape(draft.base_version)})"
    summary = preview(f"{header}\n{escape(draft.description)}", SECTION_CHARS - 1)
    body = preview(escape(draft.body[:BODY_PREVIEW_CHARS]), SECTION_CHARS - 7)
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": summary}},
    ]
    if draft.body.strip():
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{body}```"}})
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
    return blocks
