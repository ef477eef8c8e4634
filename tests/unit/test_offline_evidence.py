"""Without a model, the answer starts with the sentences that best answer the message."""

from __future__ import annotations

from bridge.model.offline_evidence import Evidence, best_evidence, rest_of_related

RELATED = "\n".join([
    "- 2026-11-20, a DM, dana: What do you know about the backups?",
    "  reply: Memory holds nothing related to this message yet.",
    "- 2026-11-19, #ops, ari: We moved staging to pelican-db-7. Backups run nightly at 02:00 UTC.",
    "- 2026-11-18, a group DM, lee: the backups bucket is eu-west-1; restores take an hour",
])


def test_the_sentence_sharing_most_words_comes_first_with_who_where_and_when() -> None:
    found = best_evidence("when do the nightly backups run?", RELATED)
    assert found[0] == Evidence("Backups run nightly at 02:00 UTC.", "ari", "#ops", "2026-11-19")
    assert str(found[0]) == "> Backups run nightly at 02:00 UTC.\n— ari, in #ops, 2026-11-19"
    assert found[1].who == "lee" and found[1].where == "a group DM"
    assert len(found) == 2


def test_a_question_is_never_evidence_and_replies_are_not_the_persons_words() -> None:
    found = best_evidence("what do you know about the backups", RELATED)
    assert all(not item.sentence.endswith("?") for item in found)
    assert all("Memory holds" not in item.sentence for item in found)


def test_nothing_in_common_means_no_evidence() -> None:
    assert best_evidence("who is on call for payroll", RELATED) == []
    assert best_evidence("backups", "No matching episodes.") == []


def test_the_related_list_leaves_out_what_the_evidence_already_showed_whole() -> None:
    related = "\n".join([
        "- 2026-11-21, a DM, dana: Our staging database lives on pelican-db-7.",
        "  reply: noted",
        "- 2026-11-19, #ops, ari: Staging moved to pelican-db-7. Who owns the database?",
    ])
    shown = best_evidence("where does the staging database live", related)
    assert [item.sentence for item in shown] == [
        "Our staging database lives on pelican-db-7.", "Staging moved to pelican-db-7."
    ]
    # dana's episode was shown whole (its reply goes with it); ari's asked something more.
    assert rest_of_related(related, shown) == related.splitlines()[2]
    assert rest_of_related(related, []) == related


def test_a_numbered_list_is_not_cut_at_its_numbers() -> None:
    related = "- 2026-11-19, #ops, ari: Rollback: 1. Page the on-call. 2. Run make rollback."
    found = best_evidence("how do we run the rollback and page the on-call", related)
    assert sorted(item.sentence for item in found) == ["2. Run make rollback.",
                                                       "Rollback: 1. Page the on-call."]
