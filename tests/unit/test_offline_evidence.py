"""Without a model, the answer starts with the sentences that best answer the message."""

from __future__ import annotations

from bridge.model.offline_evidence import Evidence, best_evidence, rest_of_related
from bridge.pipeline.episodes_block import hit_lines
from layers.episodic.episode import Episode, Hit, RecalledFile

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


def _with_a_file(passage: str) -> str:
    """A recalled episode with a file, as recall's lines show it (``hit_lines``)."""
    episode = Episode("e1", "here is the launch spec", "", created_at=1_795_000_000.0,
                      channel="eng", user="priya", user_name="priya")
    return hit_lines(Hit(episode, 1.0, files=(RecalledFile("spec.pdf", "pdf", None, passage),)))


def test_a_shared_files_passage_is_evidence_named_by_its_file_and_page() -> None:
    related = _with_a_file("[page 1]\nKickoff is in May.\n\n[page 2]\n"
                           "The launch deadline is March 14 and the owner is Priya.")
    best, second = best_evidence("when is the launch deadline?", related)
    assert best == Evidence("The launch deadline is March 14 and the owner is Priya.",
                            "priya", "#eng", "2026-11-18", "spec.pdf, page 2")
    assert str(best).endswith("— priya, in #eng, 2026-11-18 (spec.pdf, page 2)")
    assert second.sentence == "here is the launch spec" and second.source is None
    # A passage that begins inside a page names the file alone.
    (inside,) = best_evidence("owner", _with_a_file("the owner is Priya. [page 3] Budget."))
    assert inside.source == "spec.pdf"


def test_an_episode_whose_words_were_shown_stays_for_its_files_passage() -> None:
    related = _with_a_file("The deadline is March 14. Priya owns it. Ask her first.")
    shown = best_evidence("the launch spec deadline", related)
    # Its own sentence and one of its file's were shown; the rest of the file was not.
    assert len(shown) == 2
    assert rest_of_related(related, shown) == related
    said_whole = "- 2026-11-18, #eng, priya: the launch spec"
    assert rest_of_related(said_whole, best_evidence("launch spec", said_whole)) == ""
