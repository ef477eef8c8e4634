"""Where a person may have a routine post, as Slack says: their own DM with Thoth, a
public channel of their workspace (anyone there may post in one), or a private channel or
group DM they are a member of (``users.conversations``, cached a while:
``memberships.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bridge.routines.making import MayPost
from layers.shared.places import Place

if TYPE_CHECKING:
    from bridge.slack_api.memberships import SlackMemberships


def may_post_in(memberships: Callable[[], SlackMemberships]) -> MayPost:
    """``memberships``: asked for when first needed (building it loads Slack's client,
    which a command that makes no routine never needs)."""
    async def may_post(place: Place, user: str) -> bool:
        if place.channel_type in ("im", "public"):
            return True
        return place.channel in (await memberships().of(place.team, user)).private

    return may_post
