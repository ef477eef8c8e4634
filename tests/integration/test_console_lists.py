"""The console's lists, browsed and paged as a person reads them: episodes with no
words newest first, every page a link away, every filter kept from page to page."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from bridge.app import Thoth, build
from bridge.cli.main import main
from bridge.console.dependencies import console_dependencies
from bridge.console.sign_in import OneTimeLogin
from bridge.console.web_app import console_app
from bridge.pipeline.tools import Caller
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.tools.recall import recall
from bridge.settings import Settings
from layers.episodic.episode import Episode, EpisodeFile
from layers.identity.protocol import Person
from layers.shared.offloaded import Offloaded
from layers.shared.places import LOCAL_TEAM, Viewer
from tests.fakes import HashingEmbedder

# More than two pages of the console's 20, in a public channel, an hour apart.
EPISODES = 45


def _import(tmp_path: Path, lines: list[dict[str, object]]) -> None:
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = io.StringIO()
    assert main(["episodes", "import", str(episodes)], stdout=out, stderr=out,
                embedder=HashingEmbedder()) == 0, out.getvalue()


@pytest.fixture
def thoth(isolated_environment: Path, tmp_path: Path) -> Iterator[Thoth]:
    _import(tmp_path, [
        {"id": f"e{number:02d}", "user_text": f"release note number {number}", "summary": "",
         "team": LOCAL_TEAM, "channel": "C1", "channel_type": "public",
         "user": "dana" if number % 3 else "ari", "user_name": "dana" if number % 3 else "ari",
         "created_at": f"2026-11-{1 + number // 24:02d}T{number % 24:02d}:00:00+00:00"}
        for number in range(EPISODES)])
    app = build(Settings(_env_file=None), embedder=HashingEmbedder())  # type: ignore[call-arg]
    yield app
    app.close()


@pytest.fixture
def operator(thoth: Thoth) -> Iterator[TestClient]:
    login = OneTimeLogin()
    console = console_app(console_dependencies(thoth), secret="s" * 32, login=login)
    with TestClient(console) as client:
        assert client.get(f"/login/{login.token}").status_code == 200
        yield client


def _listed(page: str) -> list[str]:
    return re.findall(r'<li id="episode-(e\d+)">', page)


def _link(page: str, name: str) -> str | None:
    found = re.search(rf'<a href="([^"]*)" id="{name}"', page)
    return None if found is None else found.group(1).replace("&amp;", "&")


def test_episodes_with_no_words_are_browsed_newest_first_page_by_page(
    operator: TestClient,
) -> None:
    first = operator.get("/episodes").text
    newest = [f"e{number:02d}" for number in reversed(range(EPISODES))]
    assert _listed(first) == newest[:20]
    assert _link(first, "newest") is None  # already there
    older = _link(first, "older")
    assert older is not None
    second = operator.get(older).text
    assert _listed(second) == newest[20:40]
    third = operator.get(_link(second, "older") or "").text
    assert _listed(third) == newest[40:]
    assert _link(third, "older") is None  # the last page says so by having no Older
    assert _listed(operator.get(_link(third, "newest") or "").text) == newest[:20]


def test_a_filter_is_kept_from_page_to_page(operator: TestClient) -> None:
    first = operator.get("/episodes?person=dana").text
    danas = [f"e{number:02d}" for number in reversed(range(EPISODES)) if number % 3]
    assert _listed(first) == danas[:20]
    older = _link(first, "older") or ""
    assert "person=dana" in older
    assert _listed(operator.get(older).text) == danas[20:]


def test_search_results_page_on_and_a_forged_cursor_is_one_clear_line(
    operator: TestClient,
) -> None:
    first = operator.get("/episodes?q=release+note").text
    assert len(_listed(first)) == 20
    more = _link(first, "more") or ""
    assert "q=release+note" in more and "page=2" in more
    second = _listed(operator.get(more).text)
    assert second and not set(second) & set(_listed(first))
    refused = operator.get("/episodes?older=yesterday").text
    assert "that page of episodes is not one this console links to" in refused


def test_a_person_is_filtered_by_the_name_they_went_by_in_any_case(
    operator: TestClient,
) -> None:
    by_name = _listed(operator.get("/episodes?person=Ari").text)
    assert by_name == [f"e{number:02d}" for number in reversed(range(EPISODES))
                       if not number % 3][:20]
    assert _listed(operator.get("/episodes?person=ARI").text) == by_name


def test_the_operator_finds_a_person_by_the_name_they_went_by(operator: TestClient) -> None:
    page = operator.get("/people?team=local&user=Ari").text
    assert "Nothing is kept under the id Ari. Who went by that name:" in page
    assert '<a href="/people?team=local&amp;user=ari">' in page
    assert "release note number 42" in operator.get("/people?team=local&user=ari").text


def test_a_paused_memory_is_passed_by_until_resumed_and_its_access_log_says_who_read_it(
    operator: TestClient, thoth: Thoth,
) -> None:
    page = operator.get("/episodes/e44").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token is not None and "live: recall brings it up" in page

    def recalled() -> list[str]:
        return [hit.episode.id for hit in thoth.episodic.recall(
            "release note number 44", Viewer(sees_everything=True), k=50)]

    assert "e44" in recalled()
    paused = operator.post("/episodes/e44/state", data={"csrf_token": token.group(1),
                                                        "state": "paused"})
    assert paused.status_code == 200  # back on its page (the client follows the 303)
    shown = paused.text
    assert "Paused: recall passes it by" in shown and "paused by the operator" in shown
    assert "e44" not in recalled()
    assert "paused" in operator.get("/episodes").text  # still listed, marked
    # Nor offered back to the person as something they asked lately (suggested prompts).
    asked_lately = thoth.episodic.store.recent_asked_by("ari", Viewer(sees_everything=True), 50)
    assert "e44" not in [episode.id for episode in asked_lately]
    operator.post("/episodes/e44/state", data={"csrf_token": token.group(1), "state": "live"})
    assert "e44" in recalled()
    assert [entry.action for entry in thoth.audit.entries(action="episode")] == [
        "episode.resume", "episode.pause"]
    # Each opening of its page is in its access log, with the console as the way in.
    log = operator.get("/episodes/e44").text
    assert log.count("opened in the console") >= 3
    # Forgotten from its own page, reached after a pause: back on the list, not on itself.
    back = re.search(r'name="back" value="([^"]*)"', log)
    assert back is not None and back.group(1) == "/episodes"


def test_an_mcp_clients_recall_is_in_each_episodes_access_log(thoth: Thoth) -> None:
    tool = recall(Offloaded(thoth.episodic), k=3)
    caller = Caller(Viewer(LOCAL_TEAM, "terminal", "im", "dana"),
                    person=Person(LOCAL_TEAM, "dana"), origin="mcp stdio", at=1_800_000_000.0)
    asyncio.run(tool.handle(caller, Arguments({"query": "release note number 44"})))
    (use,) = thoth.episodic.uses.of("e44")
    assert (use.via, use.session_id, use.user) == ("mcp", "mcp stdio", "dana")


def test_an_episodes_page_shows_its_files_escaped_and_links_only_a_web_permalink(
    thoth: Thoth, operator: TestClient,
) -> None:
    thoth.episodic.remember([Episode(
        "with-files", "here is the spec", "", created_at=1_795_000_000.0, team=LOCAL_TEAM,
        channel="C1", channel_type="public", user="dana", user_name="dana", files=(
            EpisodeFile("<b>spec</b>.pdf", "pdf", 1536, "application/pdf",
                        "https://acme.slack.com/files/U1/F1/spec.pdf?a=1&b=2",
                        extract="The launch deadline is March 14."),
            EpisodeFile("shot.png", "image", 2_500_000, "image/png", "javascript:alert(1)"),
            EpisodeFile("locked.pdf", "other", 10, unread="the PDF is password-protected"),
        ))])
    page = operator.get("/episodes/with-files").text
    found = re.search(r'<ul class="files" id="files">(.*?)</ul>', page, re.DOTALL)
    assert found is not None, page
    files = [" ".join(re.sub(r"<(?!a |/a)[^>]+>", "", item).split())
             for item in re.findall(r"<li>(.*?)</li>", found.group(1), re.DOTALL)]
    assert files == [
        # A name is text, never markup; a web permalink is a link, its & escaped.
        "&lt;b&gt;spec&lt;/b&gt;.pdf · pdf, 1.5 KiB, application/pdf · <a href="
        '"https://acme.slack.com/files/U1/F1/spec.pdf?a=1&amp;b=2">open it</a>',
        # Anything else is shown as text, not a link.
        "shot.png · image, 2.4 MiB, image/png · javascript:alert(1)",
        "locked.pdf · other, 10 Bytes · not read: the PDF is password-protected",
    ]
    assert 'href="javascript' not in page
    # An episode with no files has no row for them.
    assert 'id="files"' not in operator.get("/episodes/e01").text
