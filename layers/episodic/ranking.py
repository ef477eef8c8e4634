"""Fuse lexical and vector rankings, then let recency and feedback break near-ties.

Reciprocal rank fusion needs no score calibration between BM25 and cosine.
Recency and ✅/❌ feedback only nudge the fused score by a few percent: they
reorder near-ties and never bury old evidence (a plain recency multiplier cut
LoCoMo recall by more than half, because people ask about old things).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

RRF_K = 60
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class Priors:
    """How strongly recency and feedback may move a fused score (fractions of it)."""

    recency_weight: float = 0.05
    feedback_weight: float = 0.05
    tau_days: float = 14.0


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> dict[int, float]:
    """Σ 1/(k + rank) over the rankings each id appears in (rank starts at 1)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, rowid in enumerate(ranking, start=1):
            fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (k + rank)
    return fused


def apply_priors(fused: float, *, age_seconds: float, feedback: int, priors: Priors) -> float:
    """The fused score nudged up for recent and ✅ episodes, down for ❌ ones."""
    age_days = max(age_seconds, 0.0) / SECONDS_PER_DAY
    recency = math.exp(-age_days / priors.tau_days)
    return fused * (1.0 + priors.recency_weight * recency + priors.feedback_weight * feedback)
