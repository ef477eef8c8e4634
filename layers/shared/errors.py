"""Errors grouped by how they are handled, turned into output only at the edges.

- ``BadInput``: the caller sent something we refuse (one line, exit 2 / HTTP 4xx).
- ``ConfigurationError``: the machine or settings are wrong; the message says what to set.
- ``BackendUnavailable``: a layer's backend failed; the layer is skipped, the turn goes on.
"""


class ThothError(Exception):
    """Base of every error Thoth raises on purpose."""


class BadInput(ThothError):
    """Input we refuse; nothing stored was changed."""


class ConfigurationError(ThothError):
    """Settings or the environment are wrong; the message says how to fix it."""


class BackendUnavailable(ThothError):
    """A backend (model, database, remote service) could not serve the request."""


class CostCapReached(BackendUnavailable):
    """Today's model spend reached the daily cap: no model call until midnight UTC."""

    def __init__(self, cap_usd: float) -> None:
        super().__init__(
            f"today's model spend reached DAILY_COST_CAP_USD (${cap_usd:.2f}); model calls"
            " resume after midnight UTC"
        )
        self.cap_usd = cap_usd


class PersonCapReached(CostCapReached):
    """One person's share of today's model spend is used up (the team's is not)."""

    def __init__(self, cap_usd: float) -> None:
        BackendUnavailable.__init__(
            self,
            f"this person's model spend today reached DAILY_COST_CAP_PER_PERSON_USD"
            f" (${cap_usd:.2f}); their model calls resume after midnight UTC",
        )
        self.cap_usd = cap_usd


class DatabaseAway(BackendUnavailable):
    """The database cannot be reached for now: a restart during a deploy, a failover, a
    network cut. What a caller holds is kept and tried again once it is back
    (``bridge/slack/database_away.py``); the engine's own error is its cause."""


class StorageFull(BackendUnavailable):
    """The disk holding the database is full: a write did not happen, and nothing of it was
    kept (its transaction rolled back whole). Writes go through again once there is room;
    no restart is needed. Said to a person as ``bridge.messages.DISK_FULL``."""

    def __init__(self, where: str, cause: str) -> None:
        super().__init__(f"the disk holding the database {where} is full ({cause}):"
                         " free some space; writes resume by themselves")
        self.where = where
