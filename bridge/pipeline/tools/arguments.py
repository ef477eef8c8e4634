"""A tool call's arguments, read with their types checked.

The model and an MCP client may each send anything, so a handler reads every argument
through here: one that is missing or of the wrong kind is ``BadInput`` saying what was
wanted, which each surface passes on as its error (``bridge/pipeline/tools``). Decided:
checked by the handler, not by a JSON Schema validator per surface, so both surfaces
refuse the same call with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layers.shared.errors import BadInput


class Arguments:
    def __init__(self, given: Mapping[str, Any]) -> None:
        self._given = given

    def text(self, name: str, default: str | None = None) -> str:
        """A string argument; required unless a ``default`` is given."""
        value = self.optional_text(name)
        if value is not None:
            return value
        if default is None:
            raise BadInput(f"{name!r} is required: some text")
        return default

    def optional_text(self, name: str) -> str | None:
        value = self._given.get(name)
        if value is None or isinstance(value, str):
            return value
        raise BadInput(f"{name!r} is text, not {type(value).__name__}")

    def number(self, name: str, *, default: int, least: int, most: int) -> int:
        """A whole number from ``least`` to ``most``. A number sent as a string ("10")
        counts, as the SDK's validation let it before (clients send them so)."""
        value = self._given.get(name, default)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            raise BadInput(f"{name} is a number from {least} to {most}")
        return value
