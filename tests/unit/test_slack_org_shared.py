"""Which place a channel's memory is (bridge/slack_api/directory.py): a channel shared across
the workspaces of one Enterprise Grid org is the org's, and its readers are confined."""

from __future__ import annotations

from typing import Any

from bridge.slack_api.directory import (
    ChannelInfo,
    UserInfo,
    channel_info,
    confined_reader,
    place_team,
)


def _info(**channel: Any) -> ChannelInfo:
    return channel_info("C1", {"name": "plans", "is_channel": True, **channel})


def test_an_org_shared_channel_is_the_orgs_place_and_confines_its_readers() -> None:
    shared = _info(is_shared=True, is_org_shared=True)
    assert place_team(shared, "T1", "E1") == "E1"
    colleague = UserInfo("U1", "ana", is_bot=False, team="T1")
    assert confined_reader(shared, colleague, "T1")
    # Slack did not name the org: the workspace keeps it, its readers still confined.
    assert place_team(shared, "T1", None) == "T1"


def test_a_workspaces_own_channel_and_a_slack_connect_one_are_not_the_orgs() -> None:
    own = _info(is_shared=False)
    colleague = UserInfo("U1", "ana", is_bot=False, team="T1")
    assert place_team(own, "T1", "E1") == "T1" and not confined_reader(own, colleague, "T1")
    # Shared with another organisation as well: Slack Connect's rule, under the workspace.
    connect = _info(is_shared=True, is_org_shared=True, is_ext_shared=True)
    assert place_team(connect, "T1", "E1") == "T1" and confined_reader(connect, colleague, "T1")
