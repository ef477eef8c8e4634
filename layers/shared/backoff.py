"""Exponential backoff with full jitter, for every retry loop in Thoth."""

from __future__ import annotations

import random


def backoff_delay(attempt: int, *, base_s: float, max_s: float) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, …): base·2^(attempt-1), capped, jittered.

    The jitter (a uniform draw from the upper half) keeps many clients that failed
    together from retrying in step against a service that is already overloaded.
    """
    ceiling = min(base_s * 2 ** (attempt - 1), max_s)
    return random.uniform(ceiling / 2, ceiling)
