from layers.episodic.ranking import (
    NEIGHBOUR_SHARE,
    Priors,
    apply_priors,
    fuse,
    min_max,
    with_thread_context,
)

DAY = 86_400.0


def test_min_max_scales_each_ranking_to_unit_range() -> None:
    assert min_max([(1, 12.0), (2, 7.0), (3, 2.0)]) == {1: 1.0, 2: 0.5, 3: 0.0}
    assert min_max([(4, 0.3)]) == {4: 1.0}
    assert min_max([]) == {}


def test_fuse_rewards_agreement_between_rankings() -> None:
    fused = fuse(lexical=[(1, 9.0), (2, 5.0), (3, 1.0)], semantic=[(2, 0.8), (4, 0.7), (5, 0.2)])
    assert max(fused, key=fused.__getitem__) == 2
    assert set(fused) == {1, 2, 3, 4, 5}
    assert fused[1] == 0.5 and fused[5] == 0.0


def test_thread_context_lifts_the_turn_after_a_strong_hit() -> None:
    scores = {10: 1.0, 11: 0.1, 20: 0.3}
    lifted = with_thread_context(scores, {10: [(9, 1), (11, 1)]})
    assert lifted[11] == 0.1 + NEIGHBOUR_SHARE * 1.0
    assert lifted[9] == NEIGHBOUR_SHARE  # a neighbour no search found still enters
    assert lifted[10] == 1.0 and lifted[20] == 0.3


def test_thread_context_two_turns_away_is_half_and_adds_to_one_turn_away() -> None:
    # 12 is one turn after 11 and two after 10: it gains from each, the best at each
    # distance only (10 and 30 are both two away from 12; 10 scores higher).
    scores = {10: 1.0, 11: 0.5, 12: 0.0, 30: 0.8}
    lifted = with_thread_context(
        scores, {10: [(12, 2)], 11: [(12, 1)], 30: [(12, 2), (31, 1)]})
    assert lifted[12] == NEIGHBOUR_SHARE * 0.5 + NEIGHBOUR_SHARE / 2 * 1.0
    assert lifted[31] == NEIGHBOUR_SHARE * 0.8
    assert lifted[10] == 1.0


def test_recency_reorders_a_near_tie() -> None:
    priors = Priors()
    old = apply_priors(0.800, age_seconds=400 * DAY, feedback=0, priors=priors)
    new = apply_priors(0.799, age_seconds=1 * DAY, feedback=0, priors=priors)
    assert new > old


def test_recency_and_feedback_never_bury_clearly_better_old_evidence() -> None:
    priors = Priors()
    strong_old = apply_priors(0.9, age_seconds=3 * 365 * DAY, feedback=0, priors=priors)
    weak_new = apply_priors(0.8, age_seconds=0, feedback=1, priors=priors)
    assert strong_old > weak_new


def test_feedback_moves_scores_both_ways() -> None:
    priors = Priors()
    base = apply_priors(0.5, age_seconds=50 * DAY, feedback=0, priors=priors)
    assert apply_priors(0.5, age_seconds=50 * DAY, feedback=1, priors=priors) > base
    assert apply_priors(0.5, age_seconds=50 * DAY, feedback=-1, priors=priors) < base
