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
