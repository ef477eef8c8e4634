"""Newest-first lists paged by a cursor (keyset paging: the thousandth page as quick as
the first): asked for one more than a page, the extra one says there is a next page,
which starts after the last shown ("TIME:ID" in its Older link)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from layers.shared.errors import BadInput


class Dated(Protocol):
    @property
    def created_at(self) -> float: ...

    @property
    def id(self) -> str: ...


Item = TypeVar("Item", bound=Dated)


def cursor_of(older: str, *, of: str) -> tuple[float, str] | None:
    """The cursor a page's Older link carries (``BadInput``, naming the list ``of``, if it
    is not one)."""
    if not older.strip():
        return None
    at, _, item_id = older.partition(":")
    try:
        return float(at), item_id
    except ValueError as error:
        raise BadInput(f"that page of {of} is not one this console links to: start"
                       " again from the newest") from error


def newest_page(found: Sequence[Item], size: int) -> tuple[list[Item], str | None]:
    """The page of ``found`` (asked for ``size + 1``), and the next page's cursor (None:
    this is the last)."""
    shown = list(found[:size])
    return shown, (f"{shown[-1].created_at!r}:{shown[-1].id}" if len(found) > size
                   else None)
