"""``<slack-context>``: where the turn is said and by whom, from the turn itself.

It needs no store, so it is never late; it is a source all the same so that its place
among the blocks is the registry's, like every other's.
"""

from __future__ import annotations

from bridge.pipeline.context import ContextAsk, ContextBlock, tagged
from bridge.pipeline.turn import Turn

KINDS = {
    "im": "direct message",
    "mpim": "group direct message",
    "private": "private channel",
    "public": "public channel",
}


class SlackContext:
    name = "slack-context"
    deadline_s = 1.0
    step: str | None = None
    first_turn_only = False

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        return slack_block(ask.turn)


def slack_block(turn: Turn) -> ContextBlock:
    return ContextBlock(SlackContext.name, tagged(SlackContext.name, slack_context(turn)))


def slack_context(turn: Turn) -> str:
    place = turn.place
    channel = f"#{place.channel_name}" if place.channel_name else place.channel
    lines = [
        f"workspace: {place.team}",
        f"channel: {channel} ({KINDS[place.channel_type]})",
        f"thread: {place.thread_ts or 'none'}",
        f"speaker: {turn.user_name or turn.user or 'unknown'}"
        + (f" ({turn.user})" if turn.user and turn.user_name else ""),
    ]
    return "\n".join(lines)
