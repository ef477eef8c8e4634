"""What Slack's method reference says it refuses, for the loopback Slack in ``slack_api.py``.

Each rule is written from Slack's published pages (docs.slack.dev, "Methods" and
"Rate limits"): message content limits, who may post where, and the rate-limit
tiers. A fake that accepted more than Slack would prove nothing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# chat.postMessage: "Slack will truncate messages containing more than 40,000 characters"
# (refused here as msg_too_long); chat.update: "The text field cannot exceed 4,000
# characters"; markdown_text, everywhere: "Limit this field to 12,000 characters".
MAX_TEXT_CHARS = 40_000
MAX_UPDATE_TEXT_CHARS = 4_000
MAX_MARKDOWN_CHARS = 12_000
# Block Kit: 50 blocks per message; a section's text at most 3,000 characters; the
# markdown block's text counts toward a 12,000-character total per message.
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3_000
MAX_CONTEXT_ELEMENTS = 10
# assistant.threads.setSuggestedPrompts: at most four prompts.
MAX_SUGGESTED_PROMPTS = 4
# assistant.threads.setStatus: at most ten loading messages.
MAX_LOADING_MESSAGES = 10
TASK_STATUSES = frozenset({"pending", "in_progress", "complete", "error"})


class SlackError(Exception):
    """An ``{"ok": false, "error": code}`` answer (HTTP 200, as Slack answers them);
    ``detail`` adds fields beside the code (``needed``/``provided`` of ``missing_scope``)."""

    def __init__(self, code: str, **detail: str) -> None:
        super().__init__(code)
        self.code = code
        self.detail = detail


# conversations.history / conversations.replies: the scope needed "depends on the type of
# channel-like object you're working with" (bot and user tokens alike): channels:history,
# groups:history, im:history or mpim:history. A token without it is refused with
# missing_scope, naming the scope ``needed`` and the token's scopes ``provided`` (the
# error fields of Slack's response schema for these methods).
HISTORY_SCOPES = {
    "channel": "channels:history",
    "private": "groups:history",
    "im": "im:history",
    "mpim": "mpim:history",
}

# users.conversations: each ``types`` value needs its read scope (the method's reference).
READ_SCOPES = {
    "public_channel": "channels:read",
    "private_channel": "groups:read",
    "im": "im:read",
    "mpim": "mpim:read",
}
# A stored channel's kind, as ``types`` names it.
CONVERSATION_TYPES = {
    "channel": "public_channel",
    "private": "private_channel",
    "im": "im",
    "mpim": "mpim",
}


def check_scope(needed: str, granted: str) -> None:
    """``granted``: the token's scopes, comma-separated (as ``x-oauth-scopes`` lists them)."""
    if needed not in {scope.strip() for scope in granted.split(",")}:
        raise SlackError("missing_scope", needed=needed, provided=granted)


def check_message_content(
    *,
    text: str | None,
    markdown_text: str | None,
    blocks: Any,
    attachments: Any,
    max_text: int = MAX_TEXT_CHARS,
) -> None:
    """chat.postMessage / chat.update / chat.postEphemeral: the refusals about content."""
    if markdown_text is not None and (text is not None or blocks):
        # "markdown_text ... should not be used in conjunction with blocks or text".
        raise SlackError("markdown_text_conflict")
    if text is None and markdown_text is None and not blocks and not attachments:
        raise SlackError("no_text")
    if text is not None and len(text) > max_text:
        raise SlackError("msg_too_long")
    if markdown_text is not None and len(markdown_text) > MAX_MARKDOWN_CHARS:
        raise SlackError("msg_too_long")
    check_blocks(blocks)


def check_blocks(blocks: Any) -> None:
    if blocks is None:
        return
    if not isinstance(blocks, list):
        raise SlackError("invalid_blocks_format")
    if len(blocks) > MAX_BLOCKS:
        raise SlackError("invalid_blocks")
    markdown_chars = 0
    for block in blocks:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise SlackError("invalid_blocks")
        checker = _BLOCK_CHECKS.get(block["type"])
        if checker is not None:
            checker(block)
        if block["type"] == "markdown":
            markdown_chars += len(str(block.get("text") or ""))
    if markdown_chars > MAX_MARKDOWN_CHARS:
        # "The cumulative limit for all markdown blocks in a single payload is 12,000".
        raise SlackError("msg_blocks_too_long")


def _section(block: dict[str, Any]) -> None:
    text = block.get("text")
    fields = block.get("fields")
    if text is None and not fields:
        raise SlackError("invalid_blocks")
    if text is not None and (
        not isinstance(text, dict) or len(str(text.get("text") or "")) > MAX_SECTION_TEXT
    ):
        raise SlackError("invalid_blocks")


def _markdown(block: dict[str, Any]) -> None:
    if not isinstance(block.get("text"), str) or not block["text"]:
        raise SlackError("invalid_blocks")


def _context(block: dict[str, Any]) -> None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= MAX_CONTEXT_ELEMENTS:
        raise SlackError("invalid_blocks")


def _context_actions(block: dict[str, Any]) -> None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= 5:
        raise SlackError("invalid_blocks")
    for element in elements:
        kind = element.get("type") if isinstance(element, dict) else None
        if kind == "feedback_buttons":
            for side in ("positive_button", "negative_button"):
                button = element.get(side)
                if not isinstance(button, dict) or not button.get("value") or not isinstance(
                    button.get("text"), dict
                ):
                    raise SlackError("invalid_blocks")
        elif kind != "icon_button":
            raise SlackError("invalid_blocks")


def _actions(block: dict[str, Any]) -> None:
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= 25:
        raise SlackError("invalid_blocks")


_BLOCK_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "section": _section,
    "markdown": _markdown,
    "context": _context,
    "context_actions": _context_actions,
    "actions": _actions,
}


def check_chunks(chunks: Any) -> None:
    """chat.*Stream ``chunks``: markdown_text, task_update and plan_update only."""
    if chunks is None:
        return
    if not isinstance(chunks, list):
        raise SlackError("invalid_chunks")
    for chunk in chunks:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        if kind == "markdown_text":
            if not isinstance(chunk.get("text"), str):
                raise SlackError("invalid_chunks")
            if len(chunk["text"]) > MAX_MARKDOWN_CHARS:
                raise SlackError("msg_too_long")
        elif kind == "task_update":
            if not chunk.get("id") or not chunk.get("title"):
                raise SlackError("invalid_chunks")
            if chunk.get("status") not in TASK_STATUSES:
                raise SlackError("invalid_chunks")
        elif kind == "plan_update":
            if not chunk.get("title"):
                raise SlackError("invalid_chunks")
        else:
            raise SlackError("invalid_chunks")


# -- rate limits -------------------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    """A token bucket: ``burst`` calls at once, refilled at ``per_minute``."""

    per_minute: float
    burst: int


# Slack's tiers are "per method per workspace"; Tier 2 is 20+/min, Tier 3 50+/min,
# Tier 4 100+/min, each allowing bursts. chat.postMessage is "special": about one
# message per second per channel, with short bursts.
TIER_2 = Tier(20, 20)
TIER_3 = Tier(50, 50)
TIER_4 = Tier(100, 100)
POST_PER_CHANNEL = Tier(60, 10)
METHOD_TIERS: dict[str, Tier] = {
    "chat.update": TIER_3,
    "chat.startStream": TIER_2,
    "chat.appendStream": TIER_4,
    "chat.stopStream": TIER_2,
    "chat.delete": TIER_3,
    "chat.postEphemeral": TIER_4,
    "chat.getPermalink": TIER_4,
    "reactions.add": TIER_3,
    "reactions.remove": TIER_3,
    "conversations.info": TIER_3,
    "conversations.members": TIER_4,
    "conversations.replies": TIER_3,
    "conversations.history": TIER_3,
    "users.info": TIER_4,
    "users.conversations": TIER_3,
    "auth.test": TIER_4,
    "assistant.threads.setTitle": TIER_4,
    "assistant.threads.setSuggestedPrompts": TIER_4,
}


# How long after a 429 a call may still have been on its way (loopback: milliseconds).
IN_FLIGHT_S = 0.2


class RateLimits:
    """Answers, per call, how long to wait before Slack would take it (0: go ahead)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[tuple[str, str, str], tuple[float, float]] = {}
        self._lock = threading.Lock()
        # A test may bring a method's limit down (``tiers["chat.startStream"] = ...``).
        self.tiers: dict[str, Tier] = dict(METHOD_TIERS)
        self.post_per_channel = POST_PER_CHANNEL
        # When each 429 was answered and its Retry-After ends, and the calls that came
        # before it did: Slack counts those against the app ("continued requests ... may
        # result in your app being disabled"). A call that arrives within IN_FLIGHT_S of
        # the 429 was on its way before the app could have heard of it: not counted.
        self._refused_at: dict[tuple[str, str, str], float] = {}
        self._not_before: dict[tuple[str, str, str], float] = {}
        self.early: list[tuple[str, str, float]] = []
        self.refused = 0

    def wait_for(self, method: str, args: dict[str, Any], workspace: str = "") -> int:
        """Take a token for this call; the whole seconds of Retry-After if none is left.
        Slack's limits are per workspace: ``workspace`` is the one the token is for."""
        if method == "chat.postMessage":
            return self._take(self.post_per_channel,
                              (workspace, method, str(args.get("channel"))))
        tier = self.tiers.get(method)
        return 0 if tier is None else self._take(tier, (workspace, method, ""))

    def _take(self, tier: Tier, key: tuple[str, str, str]) -> int:
        now = self._clock()
        rate = tier.per_minute / 60.0
        with self._lock:
            if (now < self._not_before.get(key, 0.0)
                    and now - self._refused_at.get(key, 0.0) > IN_FLIGHT_S):
                self.early.append((key[1], key[2], self._not_before[key] - now))
            tokens, updated = self._buckets.get(key, (float(tier.burst), now))
            tokens = min(float(tier.burst), tokens + (now - updated) * rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                wait = max(1, math.ceil((1.0 - tokens) / rate))
                if now >= self._not_before.get(key, 0.0):  # a new wait, not a repeat
                    self._refused_at[key] = now
                self._not_before[key] = max(self._not_before.get(key, 0.0), now + wait)
                self.refused += 1
                return wait
            self._buckets[key] = (tokens - 1.0, now)
            return 0
