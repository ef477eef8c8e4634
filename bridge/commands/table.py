"""Every command, in one table: a new one is its module, a line here and, for a Slack
slash command, its entry in ``manifest.yml`` (a test holds the two equal)."""

from __future__ import annotations

from bridge.commands import Command, done, quit, recall, tokens

COMMANDS: tuple[Command, ...] = (
    recall.COMMAND,
    done.COMMAND,
    tokens.COMMAND,
    quit.COMMAND,
)


def slash_commands() -> tuple[Command, ...]:
    return tuple(command for command in COMMANDS if command.slash)


def typed_in_a_thread(text: str) -> tuple[Command, str] | None:
    """The command a thread's text is, with its words, if it is one."""
    for command in COMMANDS:
        match = command.in_thread.match(text) if command.in_thread else None
        if match:
            return command, str(match.groupdict().get("args") or "")
    return None


def typed_in_the_terminal(line: str) -> tuple[Command, str] | None:
    """The chat command a line names (``/recall deploys``), with its words; None for a
    line that names none of them."""
    name, _, args = line.strip().partition(" ")
    for command in COMMANDS:
        if command.terminal and name == command.slash_name:
            return command, args
    return None


def terminal_usage() -> str:
    """The chat's commands, for the line that answers an unknown one."""
    names = [" ".join(filter(None, (command.slash_name, command.arguments)))
             for command in COMMANDS if command.terminal]
    return ", ".join(names[:-1]) + " or " + names[-1]

