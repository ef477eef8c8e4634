"""`/quit` in `thoth chat`: leave, with the session left open to resume."""

from __future__ import annotations

from bridge.commands import Command, CommandServices, Invocation, Reply


async def quit_chat(invocation: Invocation, services: CommandServices) -> Reply:
    return Reply(ends_chat=True)


COMMAND = Command(
    name="quit", help="Leave the chat (the session stays open to resume)",
    handler=quit_chat, slash=False, terminal=True,
)
