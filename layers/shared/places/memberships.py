"""What Slack says a member is in, as far as what they may read goes: asked of Slack by
``bridge/slack_api/memberships.py``, read by a DM-like view (the console, MCP)."""

from __future__ import annotations

from dataclasses import dataclass

from layers.shared.places import Viewer


@dataclass(frozen=True)
class Memberships:
    """What Slack says a member is in, as far as what they may read goes."""

    # The private channels and group DMs they are in (with Thoth).
    private: frozenset[str] = frozenset()
    # Their Enterprise Grid org, and the channels shared across its workspaces they are in.
    org: str | None = None
    org_shared: frozenset[str] = frozenset()

    def viewer(self, team: str, channel: str, user: str) -> Viewer:
        """A member reading from ``channel`` (a DM-like view: the console, MCP)."""
        return Viewer(team, channel, "im", user, member_of=self.private, org=self.org,
                      org_channels=self.org_shared)


NONE = Memberships()
