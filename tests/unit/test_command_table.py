"""One command table for every transport: Slack's manifest lists its slash commands, the
thread's text forms and the chat's lines are read from it, and who may run one is checked
in one place."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from bridge import messages
from bridge.commands import Command, CommandServices, Invocation, Reply, Where, run
from bridge.commands.table import (
    COMMANDS,
    slash_commands,
    terminal_usage,
    typed_in_a_thread,
    typed_in_the_terminal,
)
from layers.shared.places import Place, Viewer

ROOT = Path(__file__).resolve().parents[2]


def _manifest_commands() -> dict[str, dict[str, Any]]:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text(encoding="utf-8"))
    listed = manifest["features"]["slash_commands"]
    return {entry["command"]: entry for entry in listed}


def test_the_manifest_lists_exactly_the_tables_slash_commands() -> None:
    listed = _manifest_commands()
    assert sorted(listed) == sorted(command.slash_name for command in slash_commands())
    for command in slash_commands():
        entry = listed[command.slash_name]
        assert entry["description"] == command.help
        assert entry.get("usage_hint", "") == command.usage_hint


def test_command_names_are_unique() -> None:
    names = [command.name for command in COMMANDS]
    assert len(names) == len(set(names))


def test_a_threads_text_is_read_against_the_table() -> None:
    done = typed_in_a_thread("done!")
    recall = typed_in_a_thread("recall what did we ship?")
    assert done is not None and done[0].name == "done"
    assert recall is not None and recall == (recall[0], "what did we ship?")
    assert recall[0].name == "recall"
    assert typed_in_a_thread("we are done with the deploy") is None
    # A command without a text form is never read from a thread.
    assert typed_in_a_thread("thoth token laptop") is None


def test_the_chat_reads_its_commands_from_the_table() -> None:
    typed = typed_in_the_terminal("/recall deploys on friday")
    assert typed is not None and typed[0].name == "recall" and typed[1] == "deploys on friday"
    assert typed_in_the_terminal("/thoth token") is None  # Slack's alone
    assert typed_in_the_terminal("/frob") is None
    assert terminal_usage() == "/recall QUERY, /done or /quit"


def _invocation(channel_type: str) -> Invocation:
    place = Place("T1", "D1" if channel_type == "im" else "C1", channel_type,  # type: ignore[arg-type]
                  None, "x")
    return Invocation("token laptop", "U1", place, Where.SLASH,
                      Viewer("T1", place.channel, place.channel_type, "U1"))


def test_who_may_run_a_command_is_checked_before_its_handler() -> None:
    called: list[Invocation] = []

    async def handler(invocation: Invocation, services: CommandServices) -> Reply:
        called.append(invocation)
        return Reply("made")

    secret = Command(name="secret", help="h", handler=handler, only_in_a_dm=True,
                     refused_outside_a_dm=messages.TOKENS_ONLY_IN_A_DM)
    services: Any = object()  # never reached by a refused command
    refused = asyncio.run(run(secret, _invocation("public"), services))
    assert refused.text == messages.TOKENS_ONLY_IN_A_DM and called == []
    assert asyncio.run(run(secret, _invocation("im"), services)).text == "made"
    assert len(called) == 1


class _Memory:
    """Episodic memory that finds nothing, and keeps who asked what."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Viewer, int]] = []

    def recall(self, query: str, viewer: Viewer, *, k: int, zone: Any = None) -> list[Any]:
        self.asked.append((query, viewer, k))
        return []


def test_recall_reads_as_the_person_who_typed_it_from_where_they_typed_it() -> None:
    from bridge.commands import recall
    from layers.shared.offloaded import Offloaded

    memory = _Memory()
    services: Any = CommandServices(
        sessions=None, transcript=None, session_end=None, tokens=None,  # type: ignore[arg-type]
        recall_top_k=4, episodic=Offloaded(memory))  # type: ignore[arg-type]
    typed = _invocation("public")
    blank = Invocation("  ", typed.user, typed.place, Where.SLASH, typed.viewer)
    empty = asyncio.run(run(recall.COMMAND, blank, services))
    assert empty.mistake and empty.text == messages.RECALL_USAGE and memory.asked == []
    asked = Invocation("deploy day", typed.user, typed.place, Where.THREAD, typed.viewer)
    found = asyncio.run(run(recall.COMMAND, asked, services))
    assert memory.asked == [("deploy day", typed.viewer, 4)]
    assert found.text == messages.NOTHING_REMEMBERED and not found.mistake
