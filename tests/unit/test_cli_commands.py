"""`thoth`'s command table: each command's module is loaded only when its command runs,
so the table and what each module registers must agree."""

from __future__ import annotations

import argparse
import importlib

import pytest

from bridge.cli.main import COMMAND_MODULES, build_parser, named_command


@pytest.mark.parametrize("name", sorted(COMMAND_MODULES))
def test_each_module_registers_the_command_the_table_names_it_by(name: str) -> None:
    commands = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(COMMAND_MODULES[name]).register(commands)
    assert list(commands.choices) == [name]


def test_the_command_a_line_names_is_the_first_word_that_is_not_an_option() -> None:
    assert named_command(["-v", "mcp", "--team", "T1"]) == "mcp"
    assert named_command(["recall", "mcp"]) == "recall"
    # Not a command: the whole parser is built, and says so (or prints the usage).
    assert named_command(["nonsense"]) is None
    assert named_command(["--version"]) is None


def test_one_commands_parser_parses_its_line_as_the_whole_parser_does() -> None:
    line = ["-v", "recall", "the staging database", "--k", "3"]
    assert vars(build_parser("recall").parse_args(line)) == vars(build_parser().parse_args(line))
