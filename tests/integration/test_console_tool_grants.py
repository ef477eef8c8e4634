"""The team's tools a person always allows, on their page in the console: listed with
when each was granted, revoked by the person themself or from a founder's view (asked
first, then done, then audited), and by nobody else; the audit page's tool lines."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from bridge.access.signed_in import SignedInPerson
from bridge.app import Thoth, build
from bridge.console import csrf
from bridge.settings import Settings
from bridge.team_tools.grants import Grants
from layers.shared.places import LOCAL_TEAM
from tests.fakes import HashingEmbedder
from tests.integration.console_sessions import FORM_TOKEN, signed_in_clients

DANA = SignedInPerson("slack:dana", "dana", sees_everything=False, founder=False,
                      team=LOCAL_TEAM, user="dana")
ERIN = SignedInPerson("slack:erin", "erin", sees_everything=False, founder=False,
                      team=LOCAL_TEAM, user="erin")
# A founder signs in with the operator's view (sign_in_with_slack.py).
FIA = SignedInPerson("slack:fia", "fia", sees_everything=True, founder=True,
                     team=LOCAL_TEAM, user="fia")
# A tool whose name is markup, and holds a "/" and quotes: shown as text, posted back whole.
MARKUP = 'files/<img src=x onerror="alert(1)">'


@pytest.fixture
def thoth(isolated_environment: Path) -> Iterator[Thoth]:
    app = build(Settings(_env_file=None), embedder=HashingEmbedder())  # type: ignore[call-arg]
    grants = Grants(app.db)
    grants.grant(LOCAL_TEAM, "dana", "github", "create_issue")
    grants.grant(LOCAL_TEAM, "dana", "drive", MARKUP)
    grants.grant(LOCAL_TEAM, "erin", "linear", "create_ticket")
    yield app
    app.close()


@pytest.fixture
def signed_in(thoth: Thoth) -> Iterator[Callable[[SignedInPerson], TestClient]]:
    with signed_in_clients(thoth) as client:
        yield client


def _section(page: str) -> str:
    found = re.search(r'<section aria-labelledby="grants-heading">(.*?)</section>', page, re.S)
    assert found is not None, page
    return found.group(1)


def _revoke_forms(page: str) -> list[dict[str, str]]:
    """Each Revoke form of the grants section: where it posts and what it sends."""
    forms = []
    for action, body in re.findall(r'<form method="post" action="([^"]*)"[^>]*>(.*?)</form>',
                                   _section(page), re.S):
        fields = dict(re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', body))
        forms.append({"action": html.unescape(action),
                      **{name: html.unescape(value) for name, value in fields.items()}})
    return forms


def _granted(thoth: Thoth, user: str) -> list[tuple[str, str]]:
    return [(grant.server, grant.tool) for grant in Grants(thoth.db).of_person(LOCAL_TEAM, user)]


def _revokes(thoth: Thoth) -> list[tuple[str, str, str, str]]:
    return [(entry.actor, entry.target, entry.detail, entry.origin.split()[0])
            for entry in thoth.audit.entries(action="tool.revoke")]


def test_her_grants_are_on_her_own_page_and_a_founders_view_of_it(
    signed_in: Callable[[SignedInPerson], TestClient],
) -> None:
    own = _section(signed_in(DANA).get("/people").text)
    assert "Tools you always allow" in own
    assert "<code>create_issue</code> of <code>github</code> · allowed 20" in own
    assert "Revoke…" in own and "linear" not in own  # erin's is hers
    # The founder's view of dana's page: the same grants, theirs to revoke too.
    viewed = signed_in(FIA).get("/people", params={"team": LOCAL_TEAM, "user": "dana"}).text
    assert "Tools they always allow" in _section(viewed)
    assert [(form["server"], form["tool"]) for form in _revoke_forms(viewed)] == [
        ("drive", MARKUP), ("github", "create_issue")]


def test_none_granted_says_how_a_grant_is_made(
    signed_in: Callable[[SignedInPerson], TestClient],
) -> None:
    fia = signed_in(FIA)
    section = _section(fia.get("/people", params={"team": LOCAL_TEAM, "user": "gil"}).text)
    assert 'id="no-grants"' in section
    assert "<strong>Always allow</strong> on the card in Slack" in section
    assert "<kbd>a</kbd> in <code>thoth chat</code>" in section
    assert _revoke_forms(fia.get("/people", params={"team": LOCAL_TEAM, "user": "gil"}).text) \
        == []


def test_she_revokes_one_and_it_is_audited_and_asked_about_again(
    signed_in: Callable[[SignedInPerson], TestClient], thoth: Thoth,
) -> None:
    dana = signed_in(DANA)
    (markup, _) = _revoke_forms(dana.get("/people").text)
    # The form as the page has it: a tool name with markup, a "/" and quotes comes back whole.
    done = dana.post(markup.pop("action"), data=markup)
    assert done.status_code == 303, done.text
    after = dana.get(done.headers["location"]).text
    assert 'Revoked: files/&lt;img src=x onerror=&#34;alert(1)&#34;&gt; of drive is asked' \
        in after
    assert _granted(thoth, "dana") == [("github", "create_issue")]
    assert _revokes(thoth) == [
        ("slack:dana", f"drive__{MARKUP}", f"the grant of {LOCAL_TEAM}:dana", "console")]
    # Again: nothing left to revoke, said so; nothing more is written.
    again = dana.post("/people/local/dana/tools/revoke",
                      data={csrf.FIELD: FORM_TOKEN, "server": "drive", "tool": MARKUP})
    assert again.status_code == 409
    assert "is not a tool they always allow" in again.text
    assert len(_revokes(thoth)) == 1


def test_a_founder_revokes_a_members_grant(
    signed_in: Callable[[SignedInPerson], TestClient], thoth: Thoth,
) -> None:
    done = signed_in(FIA).post("/people/local/dana/tools/revoke", data={
        csrf.FIELD: FORM_TOKEN, "server": "github", "tool": "create_issue"})
    assert done.status_code == 303
    assert _granted(thoth, "dana") == [("drive", MARKUP)]
    assert _revokes(thoth) == [
        ("slack:fia", "github__create_issue", f"the grant of {LOCAL_TEAM}:dana", "console")]


def test_another_member_cannot_revoke_hers(
    signed_in: Callable[[SignedInPerson], TestClient], thoth: Thoth,
) -> None:
    erin = signed_in(ERIN)
    # Asking for dana's page shows erin her own.
    own = _section(erin.get("/people", params={"team": LOCAL_TEAM, "user": "dana"}).text)
    assert "create_ticket" in own and "create_issue" not in own
    refused = erin.post("/people/local/dana/tools/revoke", data={
        csrf.FIELD: FORM_TOKEN, "server": "github", "tool": "create_issue"})
    assert refused.status_code == 403
    assert 'id="refused"' in refused.text and "Not yours to see or change" in refused.text
    assert _granted(thoth, "dana") == [("drive", MARKUP), ("github", "create_issue")]
    assert _revokes(thoth) == []


@pytest.mark.parametrize("token", [None, "someone-elses-token"])
def test_a_revoke_without_the_forms_token_is_refused(
    signed_in: Callable[[SignedInPerson], TestClient], thoth: Thoth, token: str | None,
) -> None:
    sent = {"server": "github", "tool": "create_issue"}
    if token is not None:
        sent[csrf.FIELD] = token
    refused = signed_in(DANA).post("/people/local/dana/tools/revoke", data=sent)
    assert refused.status_code == 403
    assert "This form is out of date" in refused.text
    assert _granted(thoth, "dana") == [("drive", MARKUP), ("github", "create_issue")]
    assert _revokes(thoth) == []


def test_grant_names_are_text_never_markup(
    signed_in: Callable[[SignedInPerson], TestClient],
) -> None:
    section = _section(signed_in(DANA).get("/people").text)
    assert "<img" not in section
    assert "<code>files/&lt;img src=x onerror=&#34;alert(1)&#34;&gt;</code>" in section


def test_the_audit_page_shows_tool_lines_with_their_detail(
    signed_in: Callable[[SignedInPerson], TestClient], thoth: Thoth,
) -> None:
    thoth.audit.record(actor="slack:dana", action="tool.call", target="github__create_issue",
                       origin="conversation",
                       detail='always allowed by dana; 1,204 characters; arguments {"t": 1}')
    thoth.audit.record(actor="slack:dana", action="note.propose", target="note:n1",
                       origin="slack")
    fia = signed_in(FIA)
    assert fia.post("/people/local/dana/tools/revoke", data={
        csrf.FIELD: FORM_TOKEN, "server": "github", "tool": "create_issue"}).status_code == 303
    page = fia.get("/audit").text
    kinds = re.search(r'<nav class="tabs"[^>]*id="kinds">(.*?)</nav>', page, re.S)
    assert kinds is not None
    tool_calls = re.search(r'<a href="([^"]*)"[^>]*>tool calls</a>', kinds.group(1))
    assert tool_calls is not None
    filtered = fia.get(html.unescape(tool_calls.group(1))).text
    rows = [re.sub(r"<[^>]+>", "|", row) for row in
            re.findall(r'<tr class="entry">(.*?)</tr>', filtered, re.S)]
    assert len(rows) == 2 and "note.propose" not in filtered
    assert "|slack:fia||tool.revoke||github__create_issue|" in rows[0]
    assert f"|the grant of {LOCAL_TEAM}:dana|" in rows[0]
    assert "|tool.call|" in rows[1]
    assert "always allowed by dana; 1,204 characters; arguments {&#34;t&#34;: 1}" in rows[1]
    assert 'aria-current="page">tool calls</a>' in filtered
    assert 'id="tool-lines"' in filtered and 'id="tool-lines"' not in page
