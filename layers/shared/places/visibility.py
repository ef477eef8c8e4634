"""Who may recall what ("Memory must never leak", DESIGN.md).

An episode is visible to a viewer in the same workspace when it was said
- in a public channel: anywhere in that workspace;
- in a private channel or a group DM: only in that same channel, or to a person who is
  a member of it (``Viewer.member_of``: the console's view of a person);
- in a DM: only in a DM with the same person.
A channel shared across the workspaces of one Enterprise Grid org keeps its memory under
the org's id: it is read in that channel (confined, below) and by its members wherever
they read (``Viewer.org_channels``).
A confined viewer (Slack Connect, a guest, another organisation's person) sees only what
was said in the channel they are in (in a DM, their own DM). Nothing crosses
workspaces, but for the operator's view (``Viewer.sees_everything``,
`thoth recall --all`). The rule is written twice — as SQL for the lexical
search and as array masks for the vector search — and tests hold the two equal.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from layers.shared.places import CHANNEL_TYPES, ChannelType, Viewer

CHANNEL_TYPE_CODES: dict[ChannelType, int] = {name: code for code, name in enumerate(CHANNEL_TYPES)}
SHARED_BY_CHANNEL: tuple[ChannelType, ...] = ("private", "mpim")


def sql_predicate(viewer: Viewer, alias: str = "e") -> tuple[str, dict[str, str | None]]:
    """A WHERE clause (and its parameters) selecting the episodes ``viewer`` may see."""
    if viewer.sees_everything:
        return "1 = 1", {}
    if viewer.confined:
        return (
            f"{alias}.team = :v_team AND {alias}.channel = :v_channel"
            f" AND ({alias}.channel_type <> 'im' OR {alias}.\"user\" = :v_user)",
            {"v_team": viewer.team, "v_channel": viewer.channel, "v_user": viewer.user},
        )
    shared_channels = sorted(viewer.private_channels())
    members = ", ".join(f":v_in_{index}" for index in range(len(shared_channels)))
    clause = (
        f"{alias}.team = :v_team AND ("
        f"{alias}.channel_type = 'public'"
        f" OR ({alias}.channel_type IN ('private', 'mpim') AND {alias}.channel IN ({members}))"
        f" OR ({alias}.channel_type = 'im' AND :v_type = 'im' AND {alias}.\"user\" = :v_user))"
    )
    params: dict[str, str | None] = {
        "v_team": viewer.team,
        "v_type": viewer.channel_type,
        "v_user": viewer.user,
        **{f"v_in_{index}": channel for index, channel in enumerate(shared_channels)},
    }
    org = in_org_channels(viewer, alias)
    if org is not None:
        clause, params = f"(({clause}) OR {org[0]})", params | org[1]
    return clause, params


def in_org_channels(viewer: Viewer, alias: str, also: str = ""
                    ) -> tuple[str, dict[str, str | None]] | None:
    """A clause for the rows of the channels shared across the viewer's org that they are
    a member of (``also``: a further condition), or None when there are none."""
    org_channels = sorted(viewer.org_channels) if viewer.org else []
    if not org_channels:
        return None
    in_org = ", ".join(f":v_org_{index}" for index in range(len(org_channels)))
    return (f"({alias}.team = :v_org AND {alias}.channel_type <> 'im'"
            f" AND {alias}.channel IN ({in_org}){also})",
            {"v_org": viewer.org,
             **{f"v_org_{index}": channel for index, channel in enumerate(org_channels)}})


class Interner:
    """Maps strings to small ints so visibility can be checked on whole arrays at once."""

    MISSING = -1

    def __init__(self) -> None:
        self._codes: dict[str | None, int] = {}

    def code(self, value: str | None) -> int:
        existing = self._codes.get(value)
        if existing is None:
            existing = self._codes[value] = len(self._codes)
        return existing

    def lookup(self, value: str | None) -> int:
        """The code of a value, or MISSING (matches nothing) without interning it."""
        return self._codes.get(value, self.MISSING)


def visible_mask(
    viewer: Viewer,
    *,
    teams: npt.NDArray[np.int32],
    channels: npt.NDArray[np.int32],
    channel_types: npt.NDArray[np.int8],
    users: npt.NDArray[np.int32],
    interner: Interner,
) -> npt.NDArray[np.bool_]:
    """Boolean mask over index rows: True where ``viewer`` may see the row's episode."""
    if viewer.sees_everything:
        return np.ones(channel_types.shape, dtype=np.bool_)
    team_code = interner.lookup(viewer.team)
    if viewer.confined:
        channel_code = interner.lookup(viewer.channel)
        user_code = interner.lookup(viewer.user)
        own = (channel_types != CHANNEL_TYPE_CODES["im"]) | (users == user_code)
        return np.asarray((channels == channel_code) & (teams == team_code) & own,
                          dtype=np.bool_)
    visible = channel_types == CHANNEL_TYPE_CODES["public"]
    member_codes = [code for code in map(interner.lookup, viewer.private_channels())
                    if code != Interner.MISSING]
    if member_codes:
        shared = (channel_types == CHANNEL_TYPE_CODES["private"]) | (
            channel_types == CHANNEL_TYPE_CODES["mpim"]
        )
        visible |= shared & np.isin(channels, member_codes)
    user_code = interner.lookup(viewer.user)
    if viewer.channel_type == "im" and viewer.user is not None and user_code != Interner.MISSING:
        visible |= (channel_types == CHANNEL_TYPE_CODES["im"]) & (users == user_code)
    visible &= teams == team_code
    org_codes = [code for code in map(interner.lookup, viewer.org_channels)
                 if code != Interner.MISSING] if viewer.org else []
    if org_codes:
        visible |= ((teams == interner.lookup(viewer.org))
                    & (channel_types != CHANNEL_TYPE_CODES["im"]) & np.isin(channels, org_codes))
    return np.asarray(visible, dtype=np.bool_)
