"""How recall orders what the two searches found.

1. Each search's scores are scaled to [0, 1], so BM25 and cosine can be averaged
   without calibrating one against the other: from 0 to its best candidate's
   (``scaled_from_zero``, the default lever), or min-max over its candidates. A
   candidate found by one search is scored by the other too (``RecallLevers``).
2. The two are averaged with equal weight: neither search is trusted more (0.4 and 0.6
   both did worse on LoCoMo's development conversations).
   A turn said by someone the question names, or on a date it names, is raised.
3. Thread context: an episode inherits a share of its best thread neighbour's
   score, and half that share of its best neighbour two turns away
   (``context_two_turns_away``). In a conversation the answer is often the turn
   just after the one that matches the question's words ("what did the vet say?" ->
   "she said..."), or the asker's own next turn after a reply (A, B, A).
4. Recency and ✅/❌ feedback then move the score by a few percent at most: they
   reorder near-ties and never bury old evidence (a plain recency multiplier cut
   LoCoMo recall by more than half, because people ask about old things).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from layers.episodic.named_people import first_name

SECONDS_PER_DAY = 86_400.0
LEXICAL_WEIGHT = 0.5
# A turn takes this share of its best thread neighbour's score (with_thread_context).
# 0.3 before the turn before's words were indexed with each turn (store.py); since they
# carry much of the same help, less: on LoCoMo's development conversations 0.0 / 0.1 /
# 0.2 / 0.3 / 0.4 gave R@5 .685 / .699 / .700 / .690 / .666.
# Two turns away gets half (context_two_turns_away): with it, 0.15 / 0.2 / 0.25 gave
# R@5 / R@10 .715 / .785, .718 / .790, .721 / .789; reaching three turns away at a third
# added nothing (.717 / .792), so the walk stops at two.
NEIGHBOUR_SHARE = 0.2
# How much a named speaker's turn is preferred: enough to order it above a turn of
# someone else that matches about as well, not enough to lift a weak match over a strong
# one. Only candidates are moved (each shares a word with the question or is close in
# meaning), so a name does not pull in that person's unrelated turns. On LoCoMo's
# development conversations 0.1 / 0.2 / 0.3 / 0.4 gave R@5 .610 / .606 / .617 / .616
# (both completion halves on); LoCoMo has two speakers a conversation, a team's channel many,
# so not the top of that range.
NAMED_SPEAKER_BOOST = 0.3
# How much a turn said on a date the question names is preferred ("what did we decide on
# 13 October?"). A date a question names is meant: more than a name, which may only be
# the subject, yet a candidate must still match the question to be moved at all.
NAMED_DATE_BOOST = 0.3


@dataclass(frozen=True)
class Priors:
    """How strongly recency and feedback may move a score (fractions of it)."""

    recency_weight: float = 0.05
    feedback_weight: float = 0.05
    tau_days: float = 14.0


def min_max(scored: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Scores scaled to [0, 1] over these candidates; a lone or all-equal list scores 1."""
    if not scored:
        return {}
    values = [score for _, score in scored]
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return {rowid: 1.0 for rowid, _ in scored}
    return {rowid: (score - low) / (high - low) for rowid, score in scored}


def scaled_from_zero(scored: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Scores scaled to [0, 1] from a fixed floor of 0 to the best candidate's: BM25's
    least and a cosine of no likeness are 0 whatever the candidates, so the weakest
    candidate of a list that matched well keeps its share (Bruch et al. 2023's
    theoretical min-max). A negative cosine counts as 0."""
    if not scored:
        return {}
    high = max(score for _, score in scored)
    if high <= 1e-12:
        return {rowid: 0.0 for rowid, _ in scored}  # none is any like the question
    return {rowid: max(0.0, score) / high for rowid, score in scored}


def fuse(
    lexical: Sequence[tuple[int, float]],
    semantic: Sequence[tuple[int, float]],
    lexical_weight: float = LEXICAL_WEIGHT,
    *,
    from_zero: bool = False,
) -> dict[int, float]:
    """Weighted sum of the two scaled rankings (absent from one = 0 there): min-max over
    the candidates, or ``from_zero`` (``scaled_from_zero``)."""
    scale = scaled_from_zero if from_zero else min_max
    fused: dict[int, float] = {}
    for rowid, score in scale(lexical).items():
        fused[rowid] = fused.get(rowid, 0.0) + lexical_weight * score
    for rowid, score in scale(semantic).items():
        fused[rowid] = fused.get(rowid, 0.0) + (1.0 - lexical_weight) * score
    return fused


def with_named_speakers(
    scores: Mapping[int, float],
    speakers: Mapping[int, str | None],
    named: frozenset[str],
    boost: float = NAMED_SPEAKER_BOOST,
) -> dict[int, float]:
    """Each score raised by ``boost`` (a fraction of it) where the episode's speaker is
    one the question names."""
    return {rowid: score * (1.0 + boost) if first_name(speakers.get(rowid)) in named
            else score for rowid, score in scores.items()}


def with_named_dates(
    scores: Mapping[int, float],
    said_at: Mapping[int, float],
    windows: Sequence[tuple[float, float]],
    boost: float = NAMED_DATE_BOOST,
) -> dict[int, float]:
    """Each score raised by ``boost`` (a fraction of it) where the episode was said in
    one of the windows of time the question names."""
    def inside(moment: float | None) -> bool:
        return moment is not None and any(start <= moment < end for start, end in windows)

    return {rowid: score * (1.0 + boost) if inside(said_at.get(rowid)) else score
            for rowid, score in scores.items()}


def with_thread_context(
    scores: Mapping[int, float],
    neighbours: Mapping[int, Sequence[tuple[int, int]]],
    share: float = NEIGHBOUR_SHARE,
) -> dict[int, float]:
    """Each episode's score plus ``share`` of its best-scoring thread neighbour's one turn
    away, plus ``share / 2`` of its best two turns away, and so on.

    ``neighbours`` maps a scored episode to the episodes around it in its thread, each
    with how many turns away it is; those may be new candidates, starting from 0.
    """
    best_at_steps: dict[tuple[int, int], float] = {}
    for rowid, around in neighbours.items():
        score = scores.get(rowid, 0.0)
        for other, steps in around:
            if score > best_at_steps.get((other, steps), 0.0):
                best_at_steps[(other, steps)] = score
    result = dict(scores)
    for (rowid, steps), score in best_at_steps.items():
        result[rowid] = result.get(rowid, 0.0) + share / steps * score
    return result


def apply_priors(score: float, *, age_seconds: float, feedback: int, priors: Priors) -> float:
    """The score nudged up for recent and ✅ episodes, down for ❌ ones."""
    age_days = max(age_seconds, 0.0) / SECONDS_PER_DAY
    recency = math.exp(-age_days / priors.tau_days)
    return score * (1.0 + priors.recency_weight * recency + priors.feedback_weight * feedback)
