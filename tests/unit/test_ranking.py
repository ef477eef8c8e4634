from layers.episodic.ranking import Priors, apply_priors, reciprocal_rank_fusion

DAY = 86_400.0


def test_rrf_rewards_agreement_between_rankings() -> None:
    fused = reciprocal_rank_fusion([[1, 2, 3], [2, 4]])
    assert max(fused, key=fused.__getitem__) == 2
    assert set(fused) == {1, 2, 3, 4}


def test_recency_reorders_a_near_tie() -> None:
    priors = Priors()
    old = apply_priors(0.0300, age_seconds=400 * DAY, feedback=0, priors=priors)
    new = apply_priors(0.0299, age_seconds=1 * DAY, feedback=0, priors=priors)
    assert new > old


def test_recency_never_buries_clearly_better_old_evidence() -> None:
    priors = Priors()
    # Rank 1 in both lists versus rank 3 in one: a real gap, not a tie.
    strong_old = apply_priors(2 / 61, age_seconds=3 * 365 * DAY, feedback=0, priors=priors)
    weak_new = apply_priors(1 / 63, age_seconds=0, feedback=1, priors=priors)
    assert strong_old > weak_new


def test_feedback_moves_scores_both_ways() -> None:
    priors = Priors()
    base = apply_priors(0.03, age_seconds=50 * DAY, feedback=0, priors=priors)
    assert apply_priors(0.03, age_seconds=50 * DAY, feedback=1, priors=priors) > base
    assert apply_priors(0.03, age_seconds=50 * DAY, feedback=-1, priors=priors) < base
