"""Thoth installed into many workspaces through Slack's OAuth v2 flow (bridge/slack_api/installs/),
driven over real HTTP: a browser's steps with urllib (the install page, Slack's authorize
page on the loopback Slack, the redirect back with Bolt's state cookie), signed events to
the real Bolt app, and the real async SDK client against the loopback Slack, which issues
each workspace its own bot token and refuses it outside that workspace."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from bridge.slack_api.clients import build_async_web_client
from tests.integration.installs_harness import (
    CLIENT_ID,
    CLIENT_SECRET,
    KEY,
    SECRET,
    Served,
    free_port,
    tokens_of,
)
from tests.servers import anthropic_api as api
from tests.servers.slack_api import FakeSlack
from tests.servers.slack_install import AppInstalls, Browser, Install, install_through
from tests.waiting import wait_until


def test_two_workspaces_installed_each_answered_with_its_own_token_and_memory(
    served: Served,
) -> None:
    assert served.install(Install("T1", "One"))[0] == 200
    assert served.install(Install("T2", "Two"))[0] == 200
    assert sorted(i.team_id or "" for i in served.installations.listed()) == ["T1", "T2"]
    tokens = tokens_of(served)
    # Sealed at rest: the database file holds neither token.
    raw = sqlite3.connect(served.thoth.settings.db_path).execute(
        "SELECT bot_token_sealed FROM slack_installations").fetchall()
    assert raw and not any(token in str(raw) for token in tokens.values())

    served.model.push(api.text("Noted: the code word is lanternfish."))
    assert served.mention("T1", "C1", "the launch code word is lanternfish", "1700003000.000100",
                          user="U1") == 200
    (started,) = wait_until(lambda: served.answer_in("C1", "1700003000.000100"))
    assert started.token == tokens["T1"]
    wait_until(lambda: served.thoth.episodic.store.count() == 1)

    served.model.push(api.text("I do not know a code word."))
    assert served.mention("T2", "C2", "what is the launch code word?", "1700003000.000200",
                          user="U2") == 200
    (started,) = wait_until(lambda: served.answer_in("C2", "1700003000.000200"))
    assert started.token == tokens["T2"]
    (asked,) = wait_until(lambda: [r for r in served.model.requests
                                   if "what is the launch code word" in json.dumps(r.body)])
    # What was said in the first workspace never reaches the second one's prompt.
    assert "lanternfish" not in json.dumps(asked.body)
    # Every call carried the token of the workspace whose channel it named.
    for call in served.slack.calls():
        channel = call.args.get("channel")
        if channel in ("C1", "C2"):
            assert call.token == tokens["T1" if channel == "C1" else "T2"], call.method


def test_an_uninstalled_workspace_is_refused_at_once_and_the_other_keeps_answering(
    served: Served,
) -> None:
    served.install(Install("T1", "One"))
    served.install(Install("T2", "Two"))
    served.model.push(api.text("Kept."))
    served.mention("T1", "C1", "remember the freeze starts Friday", "1700003100.000100",
                   user="U1")
    wait_until(lambda: served.thoth.episodic.store.count() == 1)

    served.installs.uninstall("T1")
    assert served.event("T1", {"type": "app_uninstalled"}) == 200
    wait_until(lambda: [i.team_id for i in served.installations.listed()] == ["T2"])
    before = len(served.slack.calls())
    assert served.mention("T1", "C1", "are you there?", "1700003100.000200", user="U1") == 200

    served.model.push(api.text("Still here for Two."))
    served.mention("T2", "C2", "are you there?", "1700003100.000300", user="U2")
    wait_until(lambda: served.answer_in("C2", "1700003100.000300"))
    # Nothing was said, or asked of Slack, for the workspace that left.
    assert not any(c.args.get("channel") == "C1" for c in served.slack.calls()[before:])
    # Its memory stays until the operator exports or purges it.
    assert served.thoth.episodic.store.count() >= 1


def test_forged_replayed_and_cancelled_installs_store_nothing(served: Served) -> None:
    # Forged: a state Thoth never issued, from a browser that carries none.
    status, _, _ = Browser().get(served.base + "/slack/oauth_redirect?code=x&state=forged")
    assert status == 400
    # The state cookie of one browser, with a state Thoth never issued.
    browser = Browser()
    browser.get(served.base + "/slack/install")
    (cookie,) = browser.cookies
    browser.cookies[cookie] = "forged"
    assert browser.get(served.base + "/slack/oauth_redirect?code=x&state=forged")[0] == 401
    # Cancelled at Slack: the callback carries an error, no code.
    browser = Browser()
    back = served.to_slack_and_back(Install("T1", deny=True), browser)
    assert "error=access_denied" in back
    status, page, _ = browser.get(back)
    assert status == 200 and "access_denied" in page
    assert served.installations.listed() == []

    # A finished install's callback, replayed with the same cookie: its state is used.
    browser = Browser()
    back = served.to_slack_and_back(Install("T2", "Two"), browser)
    cookies = dict(browser.cookies)
    assert browser.get(back)[0] == 200
    replay = Browser()
    replay.cookies = cookies
    assert replay.get(back)[0] == 401
    assert [i.team_id for i in served.installations.listed()] == ["T2"]


def test_an_event_for_a_workspace_with_no_install_is_answered_and_nothing_stored(
    served: Served,
) -> None:
    served.install(Install("T2", "Two"))
    assert served.mention("T9", "C9", "hello?", "1700003200.000100", user="U9") == 200
    served.model.push(api.text("Here."))
    served.mention("T2", "C2", "hello?", "1700003200.000200", user="U2")
    wait_until(lambda: served.answer_in("C2", "1700003200.000200"))
    assert not [c for c in served.slack.calls() if c.args.get("channel") == "C9"]
    with served.thoth.db.read() as conn:
        teams = {row[0] for row in conn.execute("SELECT team FROM sessions").fetchall()}
    assert "T9" not in teams


def test_an_org_wide_install_answers_a_workspace_of_its_org(served: Served) -> None:
    assert served.install(Install(None, enterprise_id="E1", org_wide=True))[0] == 200
    (install,) = served.installations.listed()
    assert install.is_enterprise_install and install.enterprise_id == "E1"
    served.model.push(api.text("Hello from the org install."))
    assert served.mention("T3", "C3", "hi", "1700003300.000100", user="U3", enterprise="E1",
                          org_wide=True, bot="UBOTE1") == 200
    (started,) = wait_until(lambda: served.answer_in("C3", "1700003300.000100"))
    assert started.token == tokens_of(served)["E1"]
    # Work that starts outside a request names only the workspace: its org is found.
    workspace = served.bridge.workspace_of
    assert workspace is not None
    found = served.bridge.runner.call(workspace("T3"))
    assert found is not None and found.bot_token == tokens_of(served)["E1"]
    assert served.bridge.runner.call(workspace("T8")) is None
    # An admin gives the org's install to a workspace that has sent nothing yet, then
    # takes it back: Slack's team_access_granted and team_access_revoked say which.
    for kind, answered in (("team_access_granted", True), ("team_access_revoked", False)):
        assert served.event("T3", {"type": kind, "team_ids": ["T8"]}, enterprise="E1",
                            org_wide=True) == 200
        wait_until(lambda answered=answered: (
            served.bridge.runner.call(workspace("T8")) is not None) == answered)


def test_reflection_cards_go_with_the_token_of_the_sessions_workspace(served: Served) -> None:
    import io

    from bridge.cli.reflect import build_notifier
    from bridge.slack_api.notifier import SlackNotifier
    from reflection.notify import PrintNotifier

    served.install(Install("T2", "Two"))
    notifier = build_notifier(served.thoth, "T2", io.StringIO())
    assert isinstance(notifier, SlackNotifier)
    ts = notifier._client.chat_postMessage(channel="C2", text="a card")["ts"]
    (posted,) = [c for c in served.slack.calls("chat.postMessage")
                 if c.args.get("channel") == "C2"]
    assert ts and posted.token == tokens_of(served)["T2"]
    # A workspace Thoth is not installed in gets nothing posted: the card is printed.
    assert isinstance(build_notifier(served.thoth, "T9", io.StringIO()), PrintNotifier)


def test_thoth_serve_offers_add_to_slack_beside_the_console_and_mcp(tmp_path: Any) -> None:
    """The routes as `thoth serve` mounts them (MCP's app sits at the root): "Add to
    Slack" is served, and an install through it is kept."""
    import os
    import signal
    import subprocess
    import sys

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with FakeSlack() as slack:
        installs = AppInstalls(slack, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                               redirect_uris=(base + "/slack/oauth_redirect",))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLACK_", "ANTHROPIC_", "THOTH_", "CONSOLE_"))}
        env |= {"THOTH_HOME": str(tmp_path / "home"), "SLACK_TOKEN_KEYS": KEY,
                "SLACK_CLIENT_ID": CLIENT_ID, "SLACK_CLIENT_SECRET": CLIENT_SECRET,
                "SLACK_SIGNING_SECRET": SECRET, "CONSOLE_URL": base,
                "SLACK_API_URL": slack.url, "HF_HUB_OFFLINE": "1"}
        serve = subprocess.Popen(
            [sys.executable, "-m", "bridge", "serve", "--host", "127.0.0.1", "--port",
             str(port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            assert serve.stdout is not None
            lines = [serve.stdout.readline() for _ in range(2)]
            assert lines[1].strip() == f"Add Thoth to a workspace: {base}/slack/install"
            assert install_through(base, installs, Install("T1", "One")) == 200
            assert [bot.install.team_id for bot in installs.bots.values()] == ["T1"]
        finally:
            serve.send_signal(signal.SIGTERM)
            _, errors = serve.communicate(timeout=60)
        assert serve.returncode == 0, errors


def test_the_console_asks_slack_about_a_member_through_their_workspaces_install(
    served: Served,
) -> None:
    """Signing in (console, MCP) and the private channels a member is in are asked of
    Slack with the token of the member's own workspace; a workspace with no install
    signs no one in."""
    from bridge.slack_api.memberships import SlackMemberships
    from bridge.slack_api.sign_in_with_slack import SlackSignIn
    from layers.shared.errors import BadInput

    served.install(Install("T2", "Two"))
    settings = served.thoth.settings
    bot = build_async_web_client(settings)
    sign_in = SlackSignIn(client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                          api_url=settings.slack_api_url, founders=frozenset(), bot=bot,
                          workspace_of=served.bridge.workspace_of)
    memberships = SlackMemberships(bot, workspace_of=served.bridge.workspace_of)
    run = served.bridge.runner.call

    run(sign_in.check_member("T2", "U2"))
    (asked,) = served.slack.calls("users.info")
    assert asked.token == tokens_of(served)["T2"]
    with pytest.raises(BadInput, match="installed in"):
        run(sign_in.check_member("T9", "U9"))

    assert run(memberships.of("T2", "U2")).private == frozenset()
    (listed,) = served.slack.calls("users.conversations")
    assert listed.token == tokens_of(served)["T2"]
    assert run(memberships.of("T9", "U9")).private == frozenset()
    assert len(served.slack.calls("users.conversations")) == 1


def test_an_mcp_note_is_vouched_for_with_the_token_of_the_askers_workspace(
    served: Served,
) -> None:
    from bridge.mcp.asker import Asker
    from bridge.mcp.note_places import NotePlaces
    from bridge.mcp.server import _slack_of
    from layers.shared.errors import BadInput

    served.install(Install("T2", "Two"))
    places = NotePlaces(_slack_of(served.thoth))
    place = places.place(Asker("T2", "U2"), "C2")
    assert (place.team, place.channel, place.channel_type) == ("T2", "C2", "public")
    (asked,) = served.slack.calls("conversations.info")
    assert asked.token == tokens_of(served)["T2"]
    # Another workspace's channel is not one its token can see.
    with pytest.raises(BadInput, match="no channel"):
        places.place(Asker("T2", "U2"), "C1")
    # A workspace with no install: notes go to the person's DM only.
    with pytest.raises(BadInput, match="DM with Thoth"):
        places.place(Asker("T9", "U9"), "C9")
    assert places.place(Asker("T9", "U9"), "dm").channel_type == "im"


def test_the_loopback_keeps_each_installs_bot_apart_as_slack_does(served: Served) -> None:
    """Each install is its own bot user: in a channel shared by two workspaces, one
    install cannot edit or delete the other's message (Slack: cant_update_message), nor
    reach the other workspace's own channel, and a revoked token is refused."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    served.install(Install("T1", "One"))
    served.install(Install("T2", "Two"))
    served.slack.add_channel("CSHARED", "shared", context_team_id="T1",
                             shared_team_ids=["T1", "T2"])
    tokens = tokens_of(served)
    one = WebClient(token=tokens["T1"], base_url=served.slack.url)
    two = WebClient(token=tokens["T2"], base_url=served.slack.url)
    posted = one.chat_postMessage(channel="CSHARED", text="from one")
    assert posted["message"]["user"] == "UBOTT1"
    for refused, call in (
        ("cant_update_message", lambda: two.chat_update(channel="CSHARED", ts=posted["ts"],
                                                        text="changed")),
        ("cant_delete_message", lambda: two.chat_delete(channel="CSHARED", ts=posted["ts"])),
        ("channel_not_found", lambda: two.chat_postMessage(channel="C1", text="hi")),
    ):
        with pytest.raises(SlackApiError) as error:
            call()
        assert error.value.response["error"] == refused
    assert one.chat_update(channel="CSHARED", ts=posted["ts"], text="edited")["ok"]
    served.installs.uninstall("T1")
    with pytest.raises(SlackApiError) as error:
        one.auth_test()
    assert error.value.response["error"] == "token_revoked"


def _grid_org(served: Served) -> None:
    """Org E1, installed org-wide: workspaces T3 (U3) and T4 (U4, U5), each with a channel
    of its own, and CORG shared across both (U5 not in it)."""
    served.install(Install(None, enterprise_id="E1", org_wide=True))
    for team, channel, person in (("T3", "C3", "U3"), ("T4", "C4", "U4"), ("T4", "C4", "U5")):
        served.slack.add_user(person, f"person-{person}", team_id=team, enterprise_id="E1")
        served.slack.add_channel(channel, f"own-{team}", context_team_id=team,
                                 enterprise_id="E1")
    served.slack.add_channel("CORG", "org-plans", context_team_id="T3", enterprise_id="E1",
                             is_shared=True, is_org_shared=True, shared_team_ids=["T3", "T4"],
                             members=["U3", "U4"])


def _say_in_org(served: Served, team: str, user: str, channel: str, text: str, ts: str,
                thread_ts: str | None = None) -> None:
    """A person of ``team`` mentions Thoth; returns once the answer has started."""
    served.model.push(api.text(f"Noted ({ts})."))
    event = {"type": "app_mention", "user": user, "team": team, "user_team": team,
             "text": f"<@UBOTE1> {text}", "ts": ts, "channel": channel,
             **({"thread_ts": thread_ts} if thread_ts else {})}
    assert served.event(team, event, enterprise="E1", org_wide=True) == 200
    wait_until(lambda: [c for c in served.slack.calls("chat.startStream")
                        if c.args.get("thread_ts") == (thread_ts or ts)
                        and c.args.get("recipient_user_id") == user])


def test_a_channel_shared_across_an_orgs_workspaces_is_one_place(served: Served) -> None:
    """Enterprise Grid: a channel shared by two workspaces of one org keeps one memory,
    whichever workspace a person writes from; its readers see that channel's own memory
    only, and what it keeps reaches no workspace's own channel (DESIGN.md)."""
    _grid_org(served)
    say = lambda *args, **kw: _say_in_org(served, *args, **kw)  # noqa: E731

    def prompt_of(text: str) -> str:
        (asked,) = wait_until(lambda: [r for r in served.model.requests
                                       if text in json.dumps(r.body)])
        return json.dumps(asked.body)

    said = served.thoth.episodic.store.count
    say("T3", "U3", "CORG", "the offsite venue is Lisbon", "1700003400.000100")
    # A person of the other workspace answers in the same thread: one conversation.
    say("T4", "U4", "CORG", "and the offsite date is May 4", "1700003400.000200",
        thread_ts="1700003400.000100")
    say("T3", "U3", "C3", "our own budget code is heron", "1700003400.000300")
    wait_until(lambda: said() == 3)
    with served.thoth.db.read() as conn:
        sessions = conn.execute("SELECT team, channel FROM sessions ORDER BY channel").fetchall()
    assert [tuple(row) for row in sessions] == [("T3", "C3"), ("E1", "CORG")]
    stream = [c for c in served.slack.calls("chat.startStream")
              if c.args.get("recipient_user_id") == "U4"]
    assert stream[0].args.get("recipient_team_id") == "T4"

    # In the shared channel, the other workspace's person recalls what was said there...
    say("T4", "U4", "CORG", "what is the offsite venue?", "1700003400.000400")
    assert "Lisbon" in prompt_of("what is the offsite venue?")
    # ...but nothing a workspace keeps in its own channels.
    say("T4", "U4", "CORG", "what is our own budget code?", "1700003400.000500")
    assert "heron" not in prompt_of("what is our own budget code?")
    # The shared channel's memory stays in it: neither workspace's own channel reads it,
    # while that workspace's own memory is read there (so the check can fail).
    say("T3", "U3", "C3", "what is the offsite venue, and our budget code?",
        "1700003400.000600")
    asked_in_t3 = prompt_of("what is the offsite venue, and our budget code?")
    assert "heron" in asked_in_t3 and "Lisbon" not in asked_in_t3
    say("T4", "U4", "C4", "so what is the offsite venue?", "1700003400.000700")
    assert "Lisbon" not in prompt_of("so what is the offsite venue?")


def test_the_console_shows_an_org_shared_channels_memory_to_its_members_only(
    served: Served,
) -> None:
    from bridge.slack_api.memberships import SlackMemberships
    from layers.episodic.episode_filter import EpisodeFilter

    _grid_org(served)
    _say_in_org(served, "T3", "U3", "CORG", "the offsite venue is Lisbon", "1700003500.000100")
    _say_in_org(served, "T3", "U3", "C3", "our own budget code is heron", "1700003500.000200")
    _say_in_org(served, "T4", "U4", "C4", "our own launch is in June", "1700003500.000300")
    wait_until(lambda: served.thoth.episodic.store.count() == 3)
    memberships = SlackMemberships(build_async_web_client(served.thoth.settings),
                                   workspace_of=served.bridge.workspace_of)
    store = served.thoth.episodic.store

    def seen_by(team: str, user: str) -> set[str]:
        viewer = served.bridge.runner.call(memberships.of(team, user)).viewer(
            team, "console", user)
        listed = {e.user_text for e in store.recent(viewer, EpisodeFilter(), 10)}
        recalled = {hit.episode.user_text
                    for hit in served.thoth.episodic.recall("offsite venue", viewer, k=5)}
        assert recalled <= listed
        return listed

    lisbon, heron, june = ("the offsite venue is Lisbon", "our own budget code is heron",
                           "our own launch is in June")
    # A member from either workspace reads the shared channel's memory, and their own
    # workspace's: never the other's.
    assert seen_by("T4", "U4") == {lisbon, june}
    assert seen_by("T3", "U3") == {lisbon, heron}
    # Of the org, but not in the channel: nothing of it.
    assert seen_by("T4", "U5") == {june}


def test_what_is_learned_of_a_person_in_an_org_shared_channel_is_theirs_to_see_and_forget(
    served: Served,
) -> None:
    """Learned in the org's channel, a fact is kept under the org's key: it is read in that
    channel and by its members' own views, and "forget me" from their workspace's Home tab
    deletes it with the rest."""
    from collections.abc import Awaitable, Callable

    from bridge.slack_api.memberships import SlackMemberships
    from bridge.slack_api.workspace_client import serving_team
    from layers.identity.protocol import Person
    from layers.shared.places import Viewer

    _grid_org(served)
    _say_in_org(served, "T4", "U4", "CORG", "I run the offsite planning", "1700003700.000100")
    wait_until(lambda: served.thoth.episodic.store.count() == 1)
    (session,) = served.thoth.sessions.listed(open_only=True)
    identity = served.thoth.identity
    assert identity is not None and session.place.team == "E1"
    run = served.bridge.runner.call
    run(identity.observe(Person("E1", "U4"), ["U4 runs the offsite planning"],
                         session_id=session.id, source="test"))
    run(identity.observe(Person("T4", "U4"), ["U4 prefers mornings"], session_id=None,
                         source="test"))

    def seen(viewer: Viewer | None) -> list[str]:
        return [fact.text for fact in run(identity.facts(Person("E1", "U4"), viewer))]

    memberships = SlackMemberships(build_async_web_client(served.thoth.settings),
                                   workspace_of=served.bridge.workspace_of)
    theirs = run(memberships.of("T4", "U4"))
    assert theirs.org == "E1" and theirs.org_shared == {"CORG"}
    assert seen(theirs.viewer("T4", "console", "U4")) == ["U4 runs the offsite planning"]
    assert seen(Viewer("E1", "CORG", "public", "U4", confined=True)) == [
        "U4 runs the offsite planning"]
    # Their workspace's own channels, and someone not in the org's channel: nothing.
    assert seen(Viewer("T4", "C4", "public", "U4")) == []
    assert seen(run(memberships.of("T4", "U5")).viewer("T4", "console", "U5")) == []

    # Their Home tab lists both keys' facts; "forget everything" there deletes both.
    home = served.bridge.home

    async def in_t4(work: Callable[[], Awaitable[None]]) -> None:
        async with serving_team(served.bridge.workspace_of, "T4"):
            await work()

    run(in_t4(lambda: home.publish("T4", "U4", org="E1")))
    (tab,) = served.slack.calls("views.publish")
    assert "offsite planning" in json.dumps(tab.args) and "mornings" in json.dumps(tab.args)
    run(in_t4(lambda: home.forget_everything("T4", "U4", org="E1")))
    assert seen(None) == [] and run(identity.facts(Person("T4", "U4"), None)) == []


def test_a_skill_decided_in_the_console_shows_on_its_card_through_its_workspaces_install(
    served: Served,
) -> None:
    import io

    from bridge.access.signed_in import SignedInPerson
    from bridge.cli.reflect import build_notifier
    from bridge.console.dependencies import console_dependencies
    from bridge.console.pages import skills
    from bridge.slack_api.notifier import SlackNotifier

    served.install(Install("T2", "Two"))
    draft = served.thoth.drafts.propose("standup-digest", "Digest a standup",
                                        "Read the thread, list blockers, name owners. " * 3)
    notifier = build_notifier(served.thoth, "T2", io.StringIO())
    assert isinstance(notifier, SlackNotifier)
    notifier.post_card(draft, channel="C2", thread_ts=None)
    parts = console_dependencies(served.thoth)
    operator = SignedInPerson("operator", "operator", sees_everything=True, founder=True)
    served.bridge.runner.call(skills.decide(parts, operator, draft.id, approve=True,
                                            origin="console"))
    (updated,) = served.slack.calls("chat.update")
    assert updated.args.get("channel") == "C2" and updated.token == tokens_of(served)["T2"]
    assert "approved" in json.dumps(updated.args).lower()
