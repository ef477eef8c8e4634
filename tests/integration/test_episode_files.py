"""Files kept with an episode (issue 50), on each engine with the real MiniLM model: their
extracts are searched as the episode's own words, under the episode's place, redacted,
and forgotten with it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from layers.episodic.episode import Episode, EpisodeFile
from layers.episodic.jsonl import episode_to_json, parse_episode_line
from layers.episodic.memory import EpisodicMemory
from layers.shared.places import Viewer
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from tests.secret_corpus import SECRETS

NOW = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
OpenDatabase = Callable[[Sequence[Schema]], Database]
SPEC = ("Section 4. Rollout. The launch deadline for the Lighthouse migration is March 14,"
        " and Priya Raman owns the cutover runbook. " + "Filler about unrelated plans. " * 300
        + "Appendix: the quarantine bucket is named heron-archive-7.")


def _with_spec(id_: str, *, channel: str = "C1", channel_type: str = "public",
               extract: str = SPEC) -> Episode:
    return Episode(id=id_, user_text="here is the spec for next quarter", summary="",
                   created_at=NOW - 3600, team="T1", channel=channel,
                   channel_type=channel_type, user="U1",  # type: ignore[arg-type]
                   files=(EpisodeFile("lighthouse-spec.pdf", "pdf", 48_213, "application/pdf",
                                      "https://acme.slack.com/files/U1/F1/lighthouse-spec.pdf",
                                      extract),
                          EpisodeFile("broken.pdf", "other", 10, "application/pdf",
                                      unread="the PDF is password-protected")))


def test_a_files_words_find_its_episode_with_the_passage_the_question_is_about(
    memory: EpisodicMemory,
) -> None:
    memory.remember([_with_spec("spec"), Episode(
        id="other", user_text="lunch moved to the Thai place", summary="",
        created_at=NOW - 60, team="T1", channel="C1")])
    viewer = Viewer("T1", "C1", "public", "U2")
    # Words only the file holds, deep in it: past the windows that are embedded.
    hits = memory.recall("heron-archive-7 bucket", viewer, k=3, now=NOW)
    assert [hit.episode.id for hit in hits][:1] == ["spec"]
    recalled = hits[0].files
    assert [(file.name, file.kind) for file in recalled] == [
        ("lighthouse-spec.pdf", "pdf"), ("broken.pdf", "other")]
    assert "heron-archive-7" in recalled[0].passage
    assert recalled[0].permalink == "https://acme.slack.com/files/U1/F1/lighthouse-spec.pdf"
    # By meaning, and the passage moves to what is asked.
    by_meaning = memory.recall("who owns the cutover and when is the launch?", viewer, k=1,
                               now=NOW)
    assert by_meaning[0].episode.id == "spec"
    assert "March 14" in by_meaning[0].files[0].passage


def test_a_file_shared_in_a_private_channel_is_never_recalled_outside_it(
    memory: EpisodicMemory,
) -> None:
    memory.remember([_with_spec("private", channel="G9", channel_type="private")])
    inside = Viewer("T1", "G9", "private", "U2")
    elsewhere = Viewer("T1", "C1", "public", "U2")
    assert [hit.episode.id for hit in memory.recall("heron-archive-7", inside, k=3,
                                                    now=NOW)] == ["private"]
    assert memory.recall("heron-archive-7", elsewhere, k=3, now=NOW) == []
    assert memory.recall("Lighthouse launch deadline", elsewhere, k=3, now=NOW) == []


def test_a_secret_inside_a_file_never_reaches_the_database(
    memory: EpisodicMemory, db: Database,
) -> None:
    seeded = [secret for secret in SECRETS if secret.kind in (
        "slack bot token", "anthropic key", "aws access key id")]
    log = "\n".join(f"2026-11-01T10:00:0{at}Z INFO {secret.text}"
                    for at, secret in enumerate(seeded))
    memory.remember([_with_spec("leaky", extract=log)])
    with db.read() as conn:
        stored = [str(value) for row in conn.execute(
            "SELECT name, extract, permalink FROM episode_files").fetchall() for value in row]
        stored += [str(row[0]) for row in conn.execute(
            "SELECT files_text FROM episodes").fetchall()]
    for secret in seeded:
        assert not any(secret.secret in value for value in stored), secret.kind
    assert any("INFO" in value for value in stored)  # the rest of the log is kept


def test_forgetting_the_episode_forgets_its_files(
    memory: EpisodicMemory, db: Database,
) -> None:
    memory.remember([_with_spec("spec")])
    viewer = Viewer("T1", "C1", "public", "U2")
    assert memory.recall("heron-archive-7", viewer, k=1, now=NOW)
    assert memory.forget("spec")
    with db.read() as conn:
        (left,) = conn.execute("SELECT count(*) FROM episode_files").fetchone()
    assert left == 0
    assert memory.recall("heron-archive-7", viewer, k=1, now=NOW) == []


def test_an_episode_read_back_with_its_files(memory: EpisodicMemory) -> None:
    memory.remember([_with_spec("spec")])
    episode = memory.store.get("spec")
    assert episode is not None and episode.files == ()
    whole = memory.store.with_files(episode)
    assert [file.name for file in whole.files] == ["lighthouse-spec.pdf", "broken.pdf"]
    assert whole.files[1].unread == "the PDF is password-protected"
    assert whole.files[0].size == 48_213


def test_an_export_line_carries_the_files_and_imports_back_the_same(
    memory: EpisodicMemory,
) -> None:
    memory.remember([_with_spec("spec")])
    (exported,) = list(memory.store.iter_episodes())
    line = json.loads(episode_to_json(exported))
    assert [file["name"] for file in line["files"]] == ["lighthouse-spec.pdf", "broken.pdf"]
    assert "data" not in line["files"][0]
    back = parse_episode_line(1, {**line, "id": "again"})
    assert isinstance(back, Episode)
    assert back.files == exported.files
    memory.remember([back])
    viewer = Viewer("T1", "C1", "public", "U2")
    assert {hit.episode.id for hit in memory.recall("heron-archive-7", viewer, k=3,
                                                    now=NOW)} == {"spec", "again"}
    refused = parse_episode_line(2, {**line, "files": [{"name": "x", "kind": "video"}]})
    assert not isinstance(refused, Episode) and "files.0.kind" in str(refused)
