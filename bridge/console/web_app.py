"""The console's routes: sign-in, the pages, and the changes they make.

Every page needs a signed-in person (else the signed-out page, 401); every change is a
POST carrying the session's CSRF token (else 403) and is written to the audit log with
who, when and from where.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import jinja2
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from bridge.access.signed_in import SignedInPerson, user_of
from bridge.console import csrf
from bridge.console.dependencies import ConsoleDependencies
from bridge.console.pages import (
    audit,
    episodes,
    export,
    imports,
    notes,
    overview,
    people,
    reflections,
    skills,
    spend,
    tokens,
)
from bridge.console.sign_in import OneTimeLogin
from bridge.slack_api.sign_in_with_slack import SlackSignIn
from bridge.web.security_headers import SecurityHeaders
from layers.errors import BadInput, ThothError
from layers.identity.protocol import Person

HERE = Path(__file__).parent
SESSION_COOKIE = "thoth_console"
# Notes, drafts and the brain's history hold words from DMs and private channels:
# founders' and the operator's to read, as they are theirs to decide.
GOVERNED = "What waits for a decision, and what was decided, is the founders'."
# Where a token just made waits, in the session, for the one page that shows it.
NEW_TOKEN = "new_mcp_token"
# A sign-in lasts a working day.
SESSION_MAX_AGE_S = 12 * 3600


def console_app(
    parts: ConsoleDependencies, *, secret: str | None, login: OneTimeLogin | None,
    slack: SlackSignIn | None = None, public_url: str | None = None, https_only: bool = False,
) -> Starlette:
    """The console as an ASGI app, to mount at /console. ``secret`` signs its cookies
    (None: a new one for this process); ``login`` is the operator's one-time link;
    ``slack`` signs members in; ``public_url`` is where browsers reach it (CONSOLE_URL)."""
    # Autoescaped: what memory holds is people's words, shown as text, never as markup.
    templates = Jinja2Templates(env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True))
    templates.env.filters["when"] = _when
    pages = _Pages(parts, templates, login, slack, public_url)
    return Starlette(
        routes=[
            Route("/", pages.overview),
            Route("/login", pages.login),
            Route("/login/{token}", pages.login),
            Route("/logout", pages.logout, methods=["POST"]),
            Route("/signin/slack", pages.slack_sign_in),
            Route("/signin/slack/callback", pages.slack_callback),
            Route("/episodes", pages.episodes),
            # Imported episode ids may hold any character, "/" included.
            Route("/episodes/{episode_id:path}/forget", pages.forget_episode, methods=["POST"]),
            Route("/episodes/{episode_id:path}", pages.episode),
            Route("/notes", pages.notes),
            Route("/notes/{note_id}", pages.note),
            Route("/notes/{note_id}/edit", pages.edit_note, methods=["POST"]),
            Route("/notes/{note_id}/{decision}", pages.decide_note, methods=["POST"]),
            Route("/skills", pages.skills),
            Route("/skills/commits/{sha}", pages.commit),
            Route("/skills/commits/{sha}/revert", pages.revert, methods=["POST"]),
            Route("/skills/drafts/{draft_id}/{decision}", pages.decide_draft, methods=["POST"]),
            Route("/people", pages.people),
            Route("/people/{team}/{user}/facts/{fact_id}/forget", pages.forget_fact,
                  methods=["POST"]),
            Route("/people/{team}/{user}/forget", pages.forget_person, methods=["POST"]),
            Route("/reflections", pages.reflections),
            Route("/health", pages.health),
            Route("/spend", pages.spend),
            Route("/export", pages.export),
            Route("/export/episodes.jsonl", pages.export_episodes),
            Route("/export/brain.bundle", pages.export_brain),
            Route("/import/episodes", pages.import_episodes, methods=["POST"]),
            Route("/import/brain", pages.import_brain, methods=["POST"]),
            Route("/tokens", pages.tokens),
            Route("/tokens", pages.make_token, methods=["POST"]),
            Route("/tokens/{token_id}/revoke", pages.revoke_token, methods=["POST"]),
            Route("/audit", pages.audit),
            Route("/audit.jsonl", pages.audit_export),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(SessionMiddleware, secret_key=secret or secrets.token_urlsafe(32),
                       session_cookie=SESSION_COOKIE, max_age=SESSION_MAX_AGE_S,
                       same_site="lax", https_only=https_only),
        ],
    )


class _Pages:
    def __init__(self, parts: ConsoleDependencies, templates: Jinja2Templates,
                 login: OneTimeLogin | None, slack: SlackSignIn | None,
                 public_url: str | None) -> None:
        self._parts = parts
        self._templates = templates
        self._login = login
        self._slack = slack
        self._public_url = public_url

    async def overview(self, request: Request) -> Response:
        user = self._reader(request)
        if isinstance(user, Response):
            return user
        return self._page(request, user, "overview.html",
                          overview=await overview.overview(self._parts))

    async def login(self, request: Request) -> Response:
        offered = str(request.path_params.get("token", ""))
        user = self._login.redeem(offered) if self._login is not None and offered else None
        if user is None:
            return self._signed_out(request, "That sign-in link is used up, lapsed or wrong:"
                                             " start the console again for a new one.")
        return await self._signed_in(request, user)

    async def slack_sign_in(self, request: Request) -> Response:
        if self._slack is None:
            return self._signed_out(request, "Sign in with Slack is not set up here"
                                             " (SLACK_CLIENT_ID and SLACK_CLIENT_SECRET).")
        url, state = self._slack.authorize_url(self._callback(request))
        request.session["slack_state"] = state
        return RedirectResponse(url, status_code=303)

    async def slack_callback(self, request: Request) -> Response:
        expected = request.session.pop("slack_state", None)
        state, code = request.query_params.get("state"), request.query_params.get("code")
        if self._slack is None or not expected or not state or not code or not (
                secrets.compare_digest(str(expected), state)):
            return self._signed_out(request, "That sign-in did not start here, or has been"
                                             " used: sign in with Slack again.")
        try:
            user = await self._slack.complete(code, self._callback(request))
        except ThothError as error:
            return self._signed_out(request, str(error))
        return await self._signed_in(request, user)

    async def _signed_in(self, request: Request, user: SignedInPerson) -> Response:
        request.session.clear()
        request.session.update(user.as_session())
        await self._parts.stores.run(lambda stores: stores.audit.record(
            actor=user.actor, action="login", target="console", origin=_origin(request)))
        return RedirectResponse(_base(request) + "/", status_code=303)

    def _callback(self, request: Request) -> str:
        """Where Slack sends the browser back: the same on the way there and back."""
        root = self._public_url.rstrip("/") if self._public_url else (
            f"{request.url.scheme}://{request.url.netloc}")
        return f"{root}{_base(request)}/signin/slack/callback"

    async def logout(self, request: Request) -> Response:
        user = await self._changer(request)
        if isinstance(user, Response):
            return user
        request.session.clear()
        return RedirectResponse(_base(request) + "/", status_code=303)

    async def episodes(self, request: Request) -> Response:
        user = self._reader(request)
        if isinstance(user, Response):
            return user
        asked = request.query_params
        query, view_as = asked.get("q", ""), asked.get("as", "")
        reader = episodes.seen_as(user, view_as)
        problem, hits = None, []
        try:
            hits = await episodes.search(self._parts, reader, query, episodes.filter_of(asked))
        except BadInput as error:
            problem = str(error)
        return self._page(request, user, "episodes.html", query=query, hits=hits,
                          asked=asked, problem=problem,
                          view_as=view_as if reader is not user else "",
                          may_forget=lambda episode: episodes.may_forget(reader, episode))

    async def episode(self, request: Request) -> Response:
        user = self._reader(request)
        if isinstance(user, Response):
            return user
        shown = await episodes.page_of(self._parts, user, request.path_params["episode_id"])
        if shown is None:
            return PlainTextResponse("No such episode that you may see.", status_code=404)
        return self._page(request, user, "episode.html", shown=shown,
                          may_forget=episodes.may_forget(user, shown.episode))

    async def forget_episode(self, request: Request) -> Response:
        user = await self._changer(request)
        if isinstance(user, Response):
            return user
        episode_id = request.path_params["episode_id"]
        if not await episodes.forget(self._parts, user, episode_id, _origin(request)):
            return PlainTextResponse("No such episode of yours.", status_code=404)
        form = await request.form()
        return RedirectResponse(
            f"{_base(request)}/episodes?q={_quoted(str(form.get('q') or ''))}", status_code=303)

    async def notes(self, request: Request) -> Response:
        user = self._reader(request, operators_only=GOVERNED)
        if isinstance(user, Response):
            return user
        status = request.query_params.get("status", "proposed")
        listed = await notes.listed(self._parts, status)
        return self._page(request, user, "notes.html", status=status, listed=listed)

    async def note(self, request: Request) -> Response:
        user = self._reader(request, operators_only=GOVERNED)
        if isinstance(user, Response):
            return user
        note_id = request.path_params["note_id"]
        versions = await notes.chain(self._parts, note_id)
        if not versions:
            return PlainTextResponse("No such note.", status_code=404)
        return self._page(request, user, "note.html", note_id=note_id, versions=versions)

    async def edit_note(self, request: Request) -> Response:
        user = await self._changer(request, founders_only=True)
        if isinstance(user, Response):
            return user
        form = await request.form()
        try:
            newer = await notes.edit(self._parts, user, request.path_params["note_id"],
                                     str(form.get("text") or ""), _origin(request))
        except ThothError as error:
            return PlainTextResponse(f"Sorry: {error}", status_code=409)
        return RedirectResponse(f"{_base(request)}/notes/{newer.id}", status_code=303)

    async def decide_note(self, request: Request) -> Response:
        user = await self._changer(request, founders_only=True)
        if isinstance(user, Response):
            return user
        decision = request.path_params["decision"]
        if decision not in ("keep", "reject"):
            return PlainTextResponse("Keep or reject.", status_code=404)
        return await self._then_back(request, "notes", lambda: notes.decide(
            self._parts, user, request.path_params["note_id"], keep=decision == "keep",
            origin=_origin(request)))

    async def skills(self, request: Request) -> Response:
        user = self._reader(request, operators_only=GOVERNED)
        if isinstance(user, Response):
            return user
        return self._page(request, user, "skills.html",
                          view=await skills.skills_view(self._parts))

    async def commit(self, request: Request) -> Response:
        user = self._reader(request, operators_only=GOVERNED)
        if isinstance(user, Response):
            return user
        sha = request.path_params["sha"]
        try:
            diff = await skills.commit_diff(self._parts, sha)
        except ThothError as error:
            return PlainTextResponse(f"Sorry: {error}", status_code=404)
        return self._page(request, user, "commit.html", sha=sha, diff=diff)

    async def revert(self, request: Request) -> Response:
        user = await self._changer(request, founders_only=True)
        if isinstance(user, Response):
            return user
        return await self._then_back(request, "skills", lambda: skills.undo(
            self._parts, user, request.path_params["sha"], _origin(request)))

    async def decide_draft(self, request: Request) -> Response:
        user = await self._changer(request, founders_only=True)
        if isinstance(user, Response):
            return user
        decision = request.path_params["decision"]
        if decision not in ("approve", "reject"):
            return PlainTextResponse("Approve or reject.", status_code=404)
        return await self._then_back(request, "skills", lambda: skills.decide(
            self._parts, user, request.path_params["draft_id"],
            approve=decision == "approve", origin=_origin(request)))

    async def people(self, request: Request) -> Response:
        user = self._reader(request)
        if isinstance(user, Response):
            return user
        # A member's page is their own: "what Thoth knows about me".
        team, who = people.whose_page(user, request.query_params.get("team", ""),
                                      request.query_params.get("user", ""))
        found = None
        if team or who:
            try:
                person = people.person_of(team, who)
                found = await people.facts(
                    self._parts, await people.known_as_by(self._parts, user, person))
            except ThothError as error:
                return PlainTextResponse(f"Sorry: {error}", status_code=400)
        return self._page(request, user, "people.html", team=team, who=who, facts=found,
                          identity_on=self._parts.identity is not None,
                          said=request.query_params.get("said", ""))

    async def tokens(self, request: Request) -> Response:
        user = self._reader(request)
        if isinstance(user, Response):
            return user
        # A token just made is shown on this one look at the page, then never again: it
        # rode here in the session from the POST (post, redirect, get: a reload makes no
        # second token).
        made = request.session.pop(NEW_TOKEN, None)
        response = self._page(request, user, "tokens.html", made=made,
                              tokens=await tokens.listed(self._parts, user),
                              mcp_url=self._mcp_url(request))
        # The page may hold a secret: no cache, no history copy of it.
        response.headers["Cache-Control"] = "no-store"
        return response

    async def make_token(self, request: Request) -> Response:
        user = await self._changer(request)
        if isinstance(user, Response):
            return user
        label = str((await request.form()).get("label") or "")
        try:
            token, secret = await tokens.make(self._parts, user, label, _origin(request))
        except ThothError as error:
            return PlainTextResponse(f"Sorry: {error}", status_code=400)
        request.session[NEW_TOKEN] = {"id": token.id, "label": token.label, "secret": secret}
        return RedirectResponse(f"{_base(request)}/tokens", status_code=303)

    async def revoke_token(self, request: Request) -> Response:
        user = await self._changer(request)
        if isinstance(user, Response):
            return user
        return await self._then_back(request, "tokens", lambda: tokens.revoke(
            self._parts, user, request.path_params["token_id"], _origin(request)))

    def _mcp_url(self, request: Request) -> str:
        """Where MCP is served: beside the console, at /mcp."""
        if self._public_url:
            return self._public_url.rstrip("/").removesuffix(_base(request)) + "/mcp"
        return f"{request.base_url.scheme}://{request.base_url.netloc}/mcp"

    async def forget_fact(self, request: Request) -> Response:
        user = await self._changer(request)
        if isinstance(user, Response):
            return user
        person = self._forgettable(request, user)
        if isinstance(person, Response):
            return person
        deleted = await people.forget_fact(
            self._parts, user, await people.known_as_by(self._parts, user, person),
            request.path_params["fact_id"], _origin(request))
        return self._back_to_person(request, person, f"deleted {deleted} fact(s)")

    async def forget_person(self, request: Request) -> Response:
        user = await self._changer(request)
        if isinstance(user, Response):
            return user
        person = self._forgettable(request, user)
        if isinstance(person, Response):
            return person
        forgotten = await people.forget_everything(
            self._parts, user, await people.known_as_by(self._parts, user, person),
            _origin(request))
        said = forgotten.describe() if forgotten is not None else "no identity layer"
        return self._back_to_person(request, person, said)

    def _forgettable(self, request: Request, user: SignedInPerson) -> Person | Response:
        """The person a forget's path names, or the answer to one ``user`` may not make."""
        team, who = request.path_params["team"], request.path_params["user"]
        if not people.may_forget(user, team, who):
            return PlainTextResponse("Only what is known about you.", status_code=403)
        try:
            return people.person_of(team, who)
        except ThothError as error:
            return PlainTextResponse(f"Sorry: {error}", status_code=400)

    def _back_to_person(self, request: Request, person: Person, said: str) -> Response:
        query = "&".join(f"{k}={_quoted(v)}" for k, v in
                         (("team", person.team), ("user", person.user), ("said", said)))
        return RedirectResponse(f"{_base(request)}/people?{query}", status_code=303)

    async def reflections(self, request: Request) -> Response:
        user = self._reader(request, operators_only=GOVERNED)
        if isinstance(user, Response):
            return user
        return self._page(request, user, "reflections.html",
                          reflections=await reflections.finished(self._parts))

    async def health(self, request: Request) -> Response:
        user = self._reader(request, operators_only="The health checks are the operator's.")
        if isinstance(user, Response):
            return user
        if self._parts.health is None:
            return PlainTextResponse("No health checks here.", status_code=404)
        checks, age_s = await self._parts.health.checks()
        return self._page(request, user, "health.html", checks=checks, age_s=age_s)

    async def spend(self, request: Request) -> Response:
        user = self._reader(request, operators_only="What the model cost is the operator's.")
        if isinstance(user, Response):
            return user
        return self._page(request, user, "spend.html", report=await spend.spend(self._parts),
                          cap_usd=self._parts.daily_cap_usd)

    async def export(self, request: Request) -> Response:
        user = self._reader(request)
        if isinstance(user, Response):
            return user
        return self._page(request, user, "export.html",
                          said=request.query_params.get("said", ""))

    async def export_episodes(self, request: Request) -> Response:
        user = self._reader(request)
        if isinstance(user, Response):
            return user
        return Response(await export.episodes_jsonl(self._parts, user, _origin(request)),
                        media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="episodes.jsonl"'})

    async def export_brain(self, request: Request) -> Response:
        user = self._reader(request, operators_only="The brain's export is the operator's.")
        if isinstance(user, Response):
            return user
        return Response(await export.brain_bundle(self._parts, user, _origin(request)),
                        media_type="application/octet-stream",
                        headers={"Content-Disposition": 'attachment; filename="brain.bundle"'})

    async def import_episodes(self, request: Request) -> Response:
        return await self._imported(request, lambda user, upload, named: imports.episodes_from(
            self._parts, user, upload, named, _origin(request)))

    async def import_brain(self, request: Request) -> Response:
        return await self._imported(request, lambda user, upload, named: imports.brain_from(
            self._parts, user, upload, _origin(request)))

    async def _imported(self, request: Request, load: Callable[
            [SignedInPerson, BinaryIO, str], Awaitable[str]]) -> Response:
        """Run an import of the form's file, then back to Export saying what it did."""
        user = await self._changer(request, operator_only=True)
        if isinstance(user, Response):
            return user
        upload = (await request.form()).get("file")
        if not isinstance(upload, UploadFile) or not upload.filename:
            said = "Choose a file to import."
        else:
            try:
                said = await load(user, upload.file, upload.filename)
            except ThothError as error:
                said = f"Sorry: {error}"
        return RedirectResponse(f"{_base(request)}/export?said={_quoted(said)}",
                                status_code=303)

    async def audit(self, request: Request) -> Response:
        user = self._reader(request, operators_only="The audit log is the operator's.")
        if isinstance(user, Response):
            return user
        action = request.query_params.get("action", "")
        actor = request.query_params.get("actor", "")
        return self._page(request, user, "audit.html", action=action, actor=actor,
                          entries=await audit.entries(self._parts, action, actor))

    async def audit_export(self, request: Request) -> Response:
        user = user_of(request.session)
        if user is None or not user.sees_everything:
            return PlainTextResponse("The audit log is the operator's.", status_code=403)
        return PlainTextResponse(await audit.as_json_lines(self._parts),
                                 media_type="application/x-ndjson")

    async def _then_back(self, request: Request, page: str,
                         change: Callable[[], Awaitable[object]]) -> Response:
        """Make ``change``, then back to ``page``; a change refused (``ThothError``) is a
        409 saying why."""
        try:
            await change()
        except ThothError as error:
            return PlainTextResponse(f"Sorry: {error}", status_code=409)
        return RedirectResponse(f"{_base(request)}/{page}", status_code=303)

    def _reader(self, request: Request, *,
                operators_only: str | None = None) -> SignedInPerson | Response:
        """Who reads the page, or the answer to one who may not (``operators_only``: why
        only the operator may)."""
        user = user_of(request.session)
        if user is None:
            return self._signed_out(request)
        if operators_only is not None and not user.sees_everything:
            return PlainTextResponse(operators_only, status_code=403)
        return user

    async def _changer(self, request: Request, *, founders_only: bool = False,
                       operator_only: bool = False) -> SignedInPerson | Response:
        """Who makes the change, or the answer to a change that may not be made."""
        user = user_of(request.session)
        if user is None:
            return self._signed_out(request)
        form = await request.form()
        if not csrf.sent_back(request.session, form.get(csrf.FIELD)):
            return PlainTextResponse("This form is out of date: reload the page.",
                                     status_code=403)
        if founders_only and not user.founder:
            return PlainTextResponse("Only a founder may decide this.", status_code=403)
        if operator_only and not user.sees_everything:
            return PlainTextResponse("Only the operator may do this.", status_code=403)
        return user

    def _page(self, request: Request, user: SignedInPerson, template: str,
              **context: Any) -> Response:
        return self._templates.TemplateResponse(request, template, {
            "user": user, "base": _base(request),
            "csrf_field": csrf.FIELD, "csrf_token": csrf.token_for(request.session),
            **context,
        })

    def _signed_out(self, request: Request, why: str | None = None) -> Response:
        return self._templates.TemplateResponse(
            request, "signed_out.html",
            {"base": _base(request), "why": why, "slack": self._slack is not None},
            status_code=401)


def _base(request: Request) -> str:
    """Where the console is mounted (/console), for its links."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _origin(request: Request) -> str:
    return f"console {request.client.host if request.client else 'unknown'}"


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M")


def _quoted(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")
