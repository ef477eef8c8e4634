"""A tool call's arguments, read with their types checked.

The model and an MCP client may each send anything, so a handler reads every argument
through here: one that is missing or of the wrong kind is ``BadInput``, one line naming
the argument and what it must be, which each surface passes on as its error
(``bridge/pipeline/tools``). Decided: checked by the handler, not by a JSON Schema
validator per surface, so both surfaces refuse the same call with the same words (the
SDK's validation would answer an MCP client with four lines and a URL).

An error quotes what was given at most ``QUOTED_CHARS`` long (``said``): a client hands
the error to its model, and a megabyte of its own name back helps no one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from layers.shared.errors import BadInput

QUOTED_CHARS = 60


def cut(value: str) -> str:
    """``value`` as an error or the audit log repeats it: its first ``QUOTED_CHARS``."""
    return value if len(value) <= QUOTED_CHARS else value[:QUOTED_CHARS] + "…"


def said(value: str) -> str:
    """``value`` quoted in an error: ``'its first characters…'``."""
    return repr(cut(value))


def shortened(message: str, given: Iterable[object]) -> str:
    """``message`` with each long string of ``given`` it repeats whole (as is or quoted)
    cut short: for an error raised below the tools, which quotes what it was handed in
    full (a skill name's rule, the SDK's unknown resource)."""
    for value in given:
        if isinstance(value, str) and len(value) > QUOTED_CHARS:
            message = message.replace(repr(value), said(value)).replace(value, cut(value))
    return message


class Arguments:
    def __init__(self, given: Mapping[str, Any]) -> None:
        self._given = given

    @property
    def given(self) -> dict[str, Any]:
        """Every argument as given (a tool that passes them on whole: a team's MCP tool)."""
        return dict(self._given)

    def text(self, name: str, default: str | None = None) -> str:
        """A string argument; required unless a ``default`` is given."""
        value = self.optional_text(name)
        if value is not None:
            return value
        if default is None:
            raise BadInput(f"{name} is required: some text")
        return default

    def optional_text(self, name: str) -> str | None:
        value = self._given.get(name)
        if value is None or isinstance(value, str):
            return value
        raise BadInput(f"{name} must be text, not {_kind(value)}")

    def number(self, name: str, *, default: int, least: int, most: int) -> int:
        """A whole number from ``least`` to ``most``. A number sent as a string ("10")
        counts, as the SDK's validation let it before (clients send them so)."""
        value = self._given.get(name, default)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            raise BadInput(f"{name} must be a whole number from {least} to {most}")
        return value


def _kind(value: object) -> str:
    """A JSON value's kind, as its sender would name it."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__
