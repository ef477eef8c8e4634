"""Where a person may have a routine post, as Slack says: their own DM with Thoth, a
public channel of their workspace (anyone there may post in one), or a private channel or
group DM they are a member of (``users.conversations``, cached a while:
``memberships.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bridge.routines.making import MayPost
from bridge.routines.proposing import PlaceOf
from layers.shared.errors import BadInput
from layers.shared.places import Place

if TYPE_CHECKING:
    from bridge.slack_api.memberships import SlackMemberships
    from bridge.slack_api.workspace_client import WorkspaceClient, WorkspaceOf


def may_post_in(memberships: Callable[[], SlackMemberships],
                slack: Callable[[], WorkspaceClient | None]) -> MayPost:
    """``memberships`` and ``slack``: asked for when first needed (building them loads
    Slack's client, which a command that makes no routine never needs). A DM is only the
    person's own with Thoth (``conversations.open`` with them names it), not a DM between
    two people where `/thoth` was typed."""
    async def may_post(place: Place, user: str) -> bool:
        if place.channel_type == "public":
            return True
        if place.channel_type == "im":
            return await _own_dm(slack(), place, user)
        return place.channel in (await memberships().of(place.team, user)).private

    return may_post


async def _own_dm(client: WorkspaceClient | None, place: Place, user: str) -> bool:
    from bridge.slack_api.clients import SLACK_FAILURES

    if client is None:
        return True  # no Slack: the terminal's own DM
    try:
        opened = await client.conversations_open(users=user)
    except SLACK_FAILURES:
        return False  # unknown: never post where it may not be theirs
    return str((opened.get("channel") or {}).get("id") or "") == place.channel


def place_named(slack: Callable[[], WorkspaceClient | None],
                workspace_of: Callable[[], WorkspaceOf | None]) -> PlaceOf:
    """A channel a routine is asked to post in, as Slack says it is (its kind, its name:
    ``conversations.info``); ``BadInput`` when Thoth cannot see it, or it is someone's DM.
    ``slack`` and ``workspace_of`` are asked for when first needed, as ``may_post_in``."""
    async def place_of(team: str, channel: str) -> Place:
        from bridge.slack_api.clients import SLACK_FAILURES
        from bridge.slack_api.directory import channel_info
        from bridge.slack_api.workspace_client import serving_team

        client = slack()
        if client is None:
            raise BadInput("Slack is not configured here, so no channel can be posted in")
        try:
            async with serving_team(workspace_of(), team) as installed:
                if not installed:
                    raise BadInput("Thoth is not installed in this workspace")
                answer = await client.conversations_info(channel=channel)
        except SLACK_FAILURES as error:
            raise BadInput(f"Thoth cannot see <#{channel}>: invite it there first, then"
                           " ask again") from error
        info = channel_info(channel, answer.get("channel") or {})
        if info.channel_type == "im":
            raise BadInput("a routine posts in a channel, or in your own DM with Thoth (ask"
                           " there)")
        return Place(team, channel, info.channel_type, None, info.name)

    return place_of
