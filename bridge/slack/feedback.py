"""Feedback buttons under each reply: Block Kit ``feedback_buttons`` in ``context_actions``.

A click counts as that person's ✅ (helpful) or ❌ (not helpful) on the reply, in the
same feedback store as the reactions (``reactions.py``); clicking the same button
again takes it back, and the other button replaces it.
"""

from __future__ import annotations

from typing import Any

from bridge import messages

FEEDBACK_ACTION = "reply_feedback"
HELPFUL, NOT_HELPFUL = "helpful", "not_helpful"


def feedback_block() -> dict[str, Any]:
    return {
        "type": "context_actions",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "positive_button": {
                    "text": {"type": "plain_text", "text": messages.HELPFUL},
                    "value": HELPFUL,
                    "accessibility_label": messages.HELPFUL_LABEL,
                },
                "negative_button": {
                    "text": {"type": "plain_text", "text": messages.NOT_HELPFUL},
                    "value": NOT_HELPFUL,
                    "accessibility_label": messages.NOT_HELPFUL_LABEL,
                },
            }
        ],
    }
