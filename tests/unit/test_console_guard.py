"""Every route of the console is guarded: swept over the app's own route table, so a new
page or change that forgot its guard (or was added beside the table) fails here.

Signed out, each answers with the sign-in page (401), or refuses (403); every change
wants the session's CSRF token; what a member may not read or do is pinned, route by
route. The guard answers before a handler runs, so the console here has no stores at all:
a route that let a request through to its handler would answer 500, or worse, 200.
"""

from __future__ import annotations

import html
import json
import re
from base64 import b64encode
from collections.abc import Iterator
from typing import Any, cast

import itsdangerous
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Match, Route
from starlette.testclient import TestClient

from bridge.access.signed_in import SignedInPerson
from bridge.console import csrf, web_app
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.routes.guard import GOVERNED, Change, Open, Page
from bridge.console.web_app import ROUTES, SESSION_COOKIE, console_app
from bridge.forget_person import PersonForgetting
from layers.shared.offloaded import Offloaded

SECRET = "test-console-secret"
DANA = SignedInPerson("slack:U1", "dana", sees_everything=False, founder=False,
                      team="T1", user="U1")
# The ways in: the only routes declared to answer a signed-out browser.
WAYS_IN = ["/login", "/login/{token}", "/signin/slack", "/signin/slack/callback"]
# Signed out, refused rather than shown the sign-in page (a file a script fetches).
REFUSED_SIGNED_OUT = {"GET /audit.jsonl": "The audit log is the operator's."}
# What a member (neither founder nor operator) is refused, form token and all, and why.
REFUSED_TO_A_MEMBER = {
    "GET /notes": GOVERNED,
    "GET /notes/{note_id}": GOVERNED,
    "POST /notes/{note_id}/edit": "Only a founder may decide this.",
    "POST /notes/{note_id}/withdraw": "Only a founder may decide this.",
    "POST /notes/{note_id}/{decision}": "Only a founder may decide this.",
    "GET /skills": GOVERNED,
    "GET /skills/commits/{sha}": GOVERNED,
    "POST /skills/commits/{sha}/revert": "Only a founder may decide this.",
    "POST /skills/drafts/{draft_id}/{decision}": "Only a founder may decide this.",
    "GET /reflections": GOVERNED,
    "GET /persona": GOVERNED,
    "GET /health": "The health checks are the operator's.",
    "GET /spend": "What the model cost is the operator's.",
    "GET /export/brain.bundle": "The brain's export is the operator's.",
    "POST /import/episodes": "Only the operator may do this.",
    "POST /import/brain": "Only the operator may do this.",
    "GET /audit": "The audit log is the operator's.",
    "GET /audit.jsonl": "The audit log is the operator's.",
}
OUT_OF_DATE = "This form is out of date: reload the page."


def _console() -> Starlette:
    """The console with nothing behind it: what reaches a handler fails (500)."""
    stores = cast(Offloaded[ConsoleStores], Offloaded(object()))
    parts = ConsoleDependencies(stores, daily_cap_usd=1.0, identity=None,
                                forgetting=cast(PersonForgetting, object()))
    return console_app(parts, secret=SECRET, login=None)


@pytest.fixture
def app() -> Starlette:
    return _console()


def _served(app: Starlette) -> Iterator[tuple[str, str, Route]]:
    """Each route and method the app serves: ("GET /notes/{note_id}", the path it is
    asked at, the route). A path is checked to reach its own route, not one before it."""
    for route in app.routes:
        if not isinstance(route, Route):
            continue  # the stylesheet (Mount /static)
        assert route.methods and route.name
        params = {name: {"team": "T1", "user": "U1"}.get(name, "x")
                  for name in route.param_convertors}
        path = str(route.url_path_for(route.name, **params))
        for method in sorted(route.methods - {"HEAD"}):
            scope = {"type": "http", "path": path, "method": method, "root_path": ""}
            first = next(r for r in app.routes if r.matches(scope)[0] == Match.FULL)
            assert first is route, f"{method} {path} reaches {first}, not {route.path}"
            yield f"{method} {route.path}", path, route


def _session_cookie(user: SignedInPerson, **more: Any) -> str:
    """The signed session cookie a sign-in as ``user`` sets (``more`` in it too)."""
    data = b64encode(json.dumps({**user.as_session(), **more}).encode())
    return itsdangerous.TimestampSigner(SECRET).sign(data).decode()


def _answers(app: Starlette, *, cookie: str | None = None,
             sent: str | None = None) -> dict[str, tuple[int, str]]:
    """What each route answers, asked with ``cookie`` (None: signed out) and, on a
    change, ``sent`` as the form's CSRF token (None: none). Each is asked afresh: a
    route that signs out, or sets the session, does not change what the next one sees."""
    answers: dict[str, tuple[int, str]] = {}
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as client:
        for label, path, _ in _served(app):
            client.cookies.clear()
            if cookie is not None:
                client.cookies.set(SESSION_COOKIE, cookie)
            method = label.split()[0]
            form = {csrf.FIELD: sent} if method == "POST" and sent is not None else None
            answer = client.request(method, path, data=form)
            answers[label] = (answer.status_code, _said(answer.text))
    return answers


def _said(page: str) -> str:
    """What a refusal page says (its #refused line), else the answer as it came."""
    found = re.search(r'<p class="problem" id="refused">(.*?)</p>', page, re.S)
    return html.unescape(found.group(1)) if found else page


def _unguarded_signed_out(app: Starlette) -> dict[str, str]:
    """Each route that does not answer a signed-out browser as the guard does, and what
    it answered instead."""
    found: dict[str, str] = {}
    for label, (status, text) in _answers(app).items():
        refused = REFUSED_SIGNED_OUT.get(label)
        expected = (403, refused) if refused is not None else (401, "<h1>Sign in</h1>")
        if status != expected[0] or expected[1] not in text:
            found[label] = f"{status} {text[:60]!r}"
    return found


def _refused_to_dana(app: Starlette) -> dict[str, str]:
    """What the guard refuses dana, a member, her form token and all, and why."""
    token = "dana's-token"
    answers = _answers(app, cookie=_session_cookie(DANA, **{csrf.SESSION_KEY: token}),
                       sent=token)
    return {label: text for label, (status, text) in answers.items() if status == 403}


def test_signed_out_every_route_answers_with_the_sign_in_page_or_refuses(
    app: Starlette,
) -> None:
    # Every declared route is asked, at a path that reaches it.
    assert {route.path for _, _, route in _served(app)} == {d.path for d in ROUTES}
    assert _unguarded_signed_out(app) == {}


def test_the_sweep_finds_a_route_without_its_guard(
    app: Starlette, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def leak(request: Request) -> Response:
        return PlainTextResponse("what memory holds")

    async def leak_open(console: object, request: Request) -> Response:
        return PlainTextResponse("what memory holds")

    # Beside the table, or in it as a way in: either is found.
    app.router.routes.insert(0, Route("/leak", leak, methods=["POST"]))
    assert _unguarded_signed_out(app) == {"POST /leak": "200 'what memory holds'"}
    monkeypatch.setattr(web_app, "ROUTES", (*ROUTES, Open("/also-leak", leak_open)))
    assert _unguarded_signed_out(_console()) == {
        "GET /also-leak": "200 'what memory holds'"}


def test_the_ways_in_are_the_only_routes_declared_open() -> None:
    assert [declared.path for declared in ROUTES if isinstance(declared, Open)] == WAYS_IN


def test_every_change_is_refused_without_the_sessions_csrf_token(app: Starlette) -> None:
    changes = {f"POST {declared.path}" for declared in ROUTES
               if isinstance(declared, Change)}
    assert "POST /notes/{note_id}/{decision}" in changes
    cookie = _session_cookie(DANA, **{csrf.SESSION_KEY: "dana's-token"})
    for sent in (None, "another session's token"):
        answers = _answers(app, cookie=cookie, sent=sent)
        assert {label for label in answers if label.startswith("POST ")} == changes
        assert {label: answers[label] for label in changes} == {
            label: (403, OUT_OF_DATE) for label in changes}


def test_what_a_member_may_not_read_or_change_is_refused_before_its_handler(
    app: Starlette,
) -> None:
    assert _refused_to_dana(app) == REFUSED_TO_A_MEMBER


def test_the_member_sweep_finds_a_page_that_forgot_it_is_the_operators(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forgot = tuple(Page(declared.path, declared.show) if declared.path == "/spend"
                   and isinstance(declared, Page) else declared for declared in ROUTES)
    monkeypatch.setattr(web_app, "ROUTES", forgot)
    refused = _refused_to_dana(_console())
    assert set(REFUSED_TO_A_MEMBER) - set(refused) == {"GET /spend"}


def test_a_refusal_is_a_page_of_the_console_with_a_way_back(app: Starlette) -> None:
    cookie = _session_cookie(DANA, **{csrf.SESSION_KEY: "dana's-token"})
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as client:
        client.cookies.set(SESSION_COOKIE, cookie)
        lost = client.get("/no/such/page", headers={"referer": "http://testserver/episodes"})
        assert lost.status_code == 404
        assert "<h1>Not here</h1>" in lost.text and "Sign out" in lost.text
        assert '<a href="/episodes" id="back">Back</a>' in lost.text
        # A page of another site is never the way back.
        elsewhere = client.get("/spend", headers={"referer": "https://evil.example/x"})
        assert elsewhere.status_code == 403 and '<a href="/" id="back">' in elsewhere.text
        assert client.get("/logout").status_code == 405  # a change asked by GET
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as client:
        signed_out = client.get("/no/such/page")
        assert signed_out.status_code == 404 and "Sign out" not in signed_out.text


def test_a_used_sign_in_link_opened_while_signed_in_goes_to_the_console(
    app: Starlette,
) -> None:
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as client:
        client.cookies.set(SESSION_COOKIE, _session_cookie(DANA))
        again = client.get("/login/used-up-token")
        assert again.status_code == 303 and again.headers["location"] == "/"
        client.cookies.clear()
        assert "<h1>Sign in</h1>" in client.get("/login/used-up-token").text


def test_a_page_sent_back_by_a_form_is_one_of_the_consoles_own() -> None:
    from bridge.console.routes.answers import console_page

    assert console_page("/episodes?q=deploy&person=U1", default="/") == (
        "/episodes?q=deploy&person=U1")
    for elsewhere in ("https://evil.example/", "//evil.example/x", "/\\evil.example",
                      "episodes", "", "/../../etc"):
        assert console_page(elsewhere, default="/episodes") == "/episodes", elsewhere


def test_a_forget_reaches_every_key_a_person_is_known_under_whoever_asks_it() -> None:
    import asyncio

    from bridge.console.pages.people import every_key
    from bridge.slack_api.memberships import SlackMemberships
    from layers.identity.protocol import Person
    from layers.shared.places.memberships import Memberships

    class OnGrid:
        async def of(self, team: str, user: str) -> Memberships:
            return Memberships(org="E1")

    parts = ConsoleDependencies(cast(Offloaded[ConsoleStores], Offloaded(object())),
                                daily_cap_usd=1.0, identity=None,
                                forgetting=cast(PersonForgetting, object()),
                                memberships=cast(SlackMemberships, OnGrid()))
    assert asyncio.run(every_key(parts, Person("T1", "U1"))) == [
        Person("T1", "U1"), Person("E1", "U1")]
