"""The SQL rule and the array rule of visibility must agree on every case."""

from __future__ import annotations

import itertools
import sqlite3

import numpy as np

from layers.shared.places import CHANNEL_TYPES, ChannelType, Viewer
from layers.shared.places.visibility import (
    CHANNEL_TYPE_CODES,
    Interner,
    sql_predicate,
    visible_mask,
)

TEAMS = ("T1", "T2")
CHANNELS = ("C1", "C2", "D1")
USERS = ("U1", "U2", None)

EPISODES = list(itertools.product(TEAMS, CHANNELS, CHANNEL_TYPES, USERS))
VIEWERS = [Viewer(*combo) for combo in itertools.product(TEAMS, CHANNELS, CHANNEL_TYPES, USERS)]


Episode = tuple[str, str, ChannelType, str | None]


def _sql_visible(viewer: Viewer, episodes: list[Episode] = EPISODES) -> set[int]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE e (i INTEGER, team, channel, channel_type, user)")
    conn.executemany(
        "INSERT INTO e VALUES (?, ?, ?, ?, ?)", [(i, *row) for i, row in enumerate(episodes)]
    )
    clause, params = sql_predicate(viewer)
    return {row[0] for row in conn.execute(f"SELECT i FROM e WHERE {clause}", params)}


def _mask_visible(viewer: Viewer, episodes: list[Episode] = EPISODES) -> set[int]:
    interner = Interner()
    teams = np.array([interner.code(e[0]) for e in episodes], dtype=np.int32)
    channels = np.array([interner.code(e[1]) for e in episodes], dtype=np.int32)
    types = np.array([CHANNEL_TYPE_CODES[e[2]] for e in episodes], dtype=np.int8)
    users = np.array([interner.code(e[3]) for e in episodes], dtype=np.int32)
    mask = visible_mask(
        viewer, teams=teams, channels=channels, channel_types=types, users=users, interner=interner
    )
    return set(np.flatnonzero(mask).tolist())


def test_sql_and_array_rules_agree_for_every_viewer() -> None:
    for viewer in VIEWERS:
        assert _sql_visible(viewer) == _mask_visible(viewer), viewer


def _visible_kinds(viewer: Viewer, episodes: list[Episode] = EPISODES) -> set[Episode]:
    return {episodes[i] for i in _sql_visible(viewer, episodes)}


def test_dm_episodes_only_in_a_dm_with_the_same_person() -> None:
    dm_rows = {e for e in EPISODES if e[2] == "im"}
    seen_by_u1_in_dm = _visible_kinds(Viewer("T1", "D1", "im", "U1")) & dm_rows
    assert seen_by_u1_in_dm == {e for e in dm_rows if e[0] == "T1" and e[3] == "U1"}
    assert not _visible_kinds(Viewer("T1", "C1", "public", "U1")) & dm_rows
    assert not _visible_kinds(Viewer("T1", "C1", "private", "U1")) & dm_rows


def test_private_episodes_only_in_their_channel() -> None:
    private = {e for e in EPISODES if e[2] in ("private", "mpim")}
    seen = _visible_kinds(Viewer("T1", "C1", "public", "U1")) & private
    assert seen == {e for e in private if e[0] == "T1" and e[1] == "C1"}


def test_public_episodes_anywhere_in_the_workspace_and_never_across() -> None:
    seen = _visible_kinds(Viewer("T1", "C2", "im", "U2"))
    assert {e for e in EPISODES if e[0] == "T1" and e[2] == "public"} <= seen
    assert all(e[0] == "T1" for e in seen)


def test_the_operators_view_sees_every_episode_in_both_rules() -> None:
    everything = set(range(len(EPISODES)))
    operator = Viewer(sees_everything=True)
    assert _sql_visible(operator) == _mask_visible(operator) == everything
    # No other viewer does.
    assert all(_sql_visible(viewer) != everything for viewer in VIEWERS)


MEMBERS = [Viewer(team, channel, channel_type, user, member_of=frozenset(member_of))
           for team, channel, channel_type, user in itertools.product(
               TEAMS, ("console", "C1"), ("im", "public"), USERS)
           for member_of in ((), ("C2",), ("C2", "D1"), ("C9",))]


def test_both_rules_agree_for_members_of_private_channels() -> None:
    for viewer in MEMBERS:
        assert _sql_visible(viewer) == _mask_visible(viewer), viewer


def test_a_member_reads_the_private_channels_they_are_in_and_no_other() -> None:
    private = {e for e in EPISODES if e[2] in ("private", "mpim")}
    member = Viewer("T1", "console", "im", "U1", member_of=frozenset({"C2"}))
    assert _visible_kinds(member) & private == {e for e in private if e[:2] == ("T1", "C2")}
    assert not _visible_kinds(Viewer("T1", "console", "im", "U1")) & private
    # A confined viewer's memberships do not widen what they read.
    confined = Viewer("T1", "C1", "public", "U1", confined=True, member_of=frozenset({"C2"}))
    assert all(e[1] == "C1" for e in _visible_kinds(confined))


ORG_EPISODES = EPISODES + list(itertools.product(("E1",), CHANNELS, CHANNEL_TYPES, USERS))
ORG_VIEWERS = [Viewer(team, channel, channel_type, user, org=org,
                      org_channels=frozenset(org_channels), member_of=frozenset(member_of))
               for team, channel, channel_type, user in itertools.product(
                   TEAMS, ("console", "C1"), ("im", "public"), USERS)
               for org, org_channels in ((None, ("C2",)), ("E1", ()), ("E1", ("C2",)),
                                         ("E1", ("C1", "D1")), ("E9", ("C2",)))
               for member_of in ((), ("C2",))]


def test_both_rules_agree_for_members_of_channels_shared_across_an_org() -> None:
    for viewer in ORG_VIEWERS:
        assert _sql_visible(viewer, ORG_EPISODES) == _mask_visible(viewer, ORG_EPISODES), viewer


def test_an_org_shared_channel_is_read_by_its_members_from_any_workspace_and_no_one_else(
) -> None:
    def seen(viewer: Viewer) -> set[Episode]:
        return _visible_kinds(viewer, ORG_EPISODES)

    org_kept = {e for e in ORG_EPISODES if e[0] == "E1"}
    for team in TEAMS:
        member = Viewer(team, "console", "im", "U1", org="E1", org_channels=frozenset({"C2"}))
        assert seen(member) & org_kept == {e for e in org_kept if e[1] == "C2" and e[2] != "im"}
    # Not a member, or of another org: nothing the org keeps.
    assert not seen(Viewer("T1", "console", "im", "U1", org="E1")) & org_kept
    assert not seen(Viewer("T1", "console", "im", "U1", org="E9",
                           org_channels=frozenset({"C2"}))) & org_kept
    # In the channel itself (a turn there is confined): its own memory, whoever asks.
    here = Viewer("E1", "C2", "public", "U2", confined=True)
    assert seen(here) == {e for e in ORG_EPISODES
                          if e[:2] == ("E1", "C2") and (e[2] != "im" or e[3] == "U2")}
