"""The console's lists, browsed and paged as a person reads them: episodes with no
words newest first, every page a link away, every filter kept from page to page."""

from __future__ import annotations

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
from bridge.settings import Settings
from layers.shared.places import LOCAL_TEAM
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
