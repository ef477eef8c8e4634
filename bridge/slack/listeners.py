"""What Bolt delivers, each kind of delivery one entry in one list, registered in a loop.

Cross-cutting work is done here once, as bolt-python's middleware does it: every click,
shortcut and slash command is acknowledged at once (with the words Slack shows, where a
command has any), and every listener's work goes to the turns' runner, so a listener is
only its job. (Events need no ack: Bolt answers Slack's HTTP request for them itself.)
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from slack_bolt.async_app import AsyncAck, AsyncApp

from bridge.slack.runner import TurnRunner

Kind = Literal["event", "action", "shortcut", "command"]
# What a delivery sets going, given its body (an event's body carries it under "event");
# None when there is nothing to do.
Work = Callable[[dict[str, Any]], Coroutine[Any, Any, object] | None]


@dataclass(frozen=True)
class Listener:
    """One kind of delivery: Bolt's listener kind, its key (the event type, action id,
    shortcut callback id or command) and its work."""

    kind: Kind
    key: str
    work: Work
    # What Slack shows the person at once, for a slash command.
    ack_text: str | None = None


def register(app: AsyncApp, runner: TurnRunner, listeners: Sequence[Listener]) -> None:
    for listener in listeners:
        register_with_bolt = getattr(app, listener.kind)
        register_with_bolt(listener.key)(_bolt_listener(runner, listener))


def _bolt_listener(runner: TurnRunner, listener: Listener,
                   ) -> Callable[[AsyncAck, dict[str, Any]], Coroutine[Any, Any, None]]:
    async def on_delivery(ack: AsyncAck, body: dict[str, Any]) -> None:
        if listener.kind != "event":
            await (ack(listener.ack_text) if listener.ack_text else ack())
        work = listener.work(body)
        if work is not None:
            runner.submit(work, turn=False)

    return on_delivery
