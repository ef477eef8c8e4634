"""The console's Routines page: a member sees their own routines (where, when in their
zone, paused or when next, the last runs and how each went), founders and the operator
see everyone's; pause, resume, run now and delete are the manager's (checked, audited),
and a routine that is not yours is refused."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.testclient import TestClient

from bridge.access.signed_in import SignedInPerson
from bridge.app import Thoth, build
from bridge.console import csrf
from bridge.routines.store import Routine, RoutineStore
from bridge.settings import Settings
from layers.shared.places import Place
from tests.fakes import HashingEmbedder
from tests.integration.console_sessions import FORM_TOKEN, signed_in_clients

DANA = SignedInPerson("slack:U1", "dana", sees_everything=False, founder=False,
                      team="T1", user="U1")
ERIN = SignedInPerson("slack:U2", "erin", sees_everything=False, founder=False,
                      team="T1", user="U2")
FRANK = SignedInPerson("slack:U9", "frank", sees_everything=False, founder=True,
                       team="T1", user="U9")
OPERATOR = SignedInPerson("operator", "operator", sees_everything=True, founder=True)
GENERAL = Place("T1", "C1", "public", None, "general")
# A Monday 9:00 in London (UTC in winter).
MONDAY_9 = datetime(2030, 12, 2, 9, 0, tzinfo=UTC)

Client = Callable[[SignedInPerson], TestClient]


@pytest.fixture
def thoth(isolated_environment: Path) -> Iterator[Thoth]:
    app = build(Settings(_env_file=None), embedder=HashingEmbedder())  # type: ignore[call-arg]
    yield app
    app.close()


@pytest.fixture
def signed_in(thoth: Thoth) -> Iterator[Client]:
    with signed_in_clients(thoth) as client:
        yield client


def _made(thoth: Thoth, creator: str, name: str, instruction: str) -> Routine:
    return RoutineStore(thoth.db).create(GENERAL, creator, name, instruction, "0 9 * * 1-5",
                                         "Europe/London", MONDAY_9.timestamp())


def _said(answer: httpx.Response) -> str:
    location = answer.headers["location"]
    return parse_qs(urlsplit(location).query)["said"][0]


def test_a_member_sees_their_own_routines_with_their_last_runs(
    signed_in: Client, thoth: Thoth,
) -> None:
    dana_s = _made(thoth, "U1", "dana", "post yesterday's decisions")
    erin_s = _made(thoth, "U2", "erin", "remind me of the deploy freeze")
    store = RoutineStore(thoth.db)
    due = (MONDAY_9 - timedelta(days=3)).timestamp()
    assert store.begin_run(dana_s.id, due, "replica-a")
    store.end_run(dana_s.id, due, "posted", "posted in #general", "1.1")
    page = signed_in(DANA).get("/routines")
    assert page.status_code == 200
    assert f'id="routine-{dana_s.id}"' in page.text
    assert "post yesterday&#39;s decisions" in page.text
    assert f'id="routine-{erin_s.id}"' not in page.text and "deploy freeze" not in page.text
    assert "#general" in page.text and "0 9 * * 1-5" in page.text and "Europe/London" in page.text
    assert "Mon 2030-12-02 09:00" in page.text  # its next run, in its zone
    assert "Fri 2030-11-29 09:00: posted (posted in #general)" in page.text
    assert f"/routines/{dana_s.id}/pause" in page.text
    assert 'href="/routines"' in page.text  # in the nav


def test_founders_and_the_operator_see_everyones(signed_in: Client, thoth: Thoth) -> None:
    dana_s = _made(thoth, "U1", "dana", "post yesterday's decisions")
    erin_s = _made(thoth, "U2", "erin", "remind me of the deploy freeze")
    for person in (FRANK, OPERATOR):
        page = signed_in(person).get("/routines").text
        assert "Everyone's routines" in page
        assert f'id="routine-{dana_s.id}"' in page and f'id="routine-{erin_s.id}"' in page
        assert "T1:U2" in page
    assert "You have no routines." in signed_in(
        SignedInPerson("slack:U5", "gus", False, False, "T1", "U5")).get("/routines").text


def test_pause_resume_run_now_and_delete_are_made_and_audited(
    signed_in: Client, thoth: Thoth,
) -> None:
    routine = _made(thoth, "U1", "dana", "post yesterday's decisions")
    dana = signed_in(DANA)
    assert dana.post(f"/routines/{routine.id}/pause", data={}).status_code == 403  # no token
    paused = dana.post(f"/routines/{routine.id}/pause", data={csrf.FIELD: FORM_TOKEN})
    assert paused.status_code == 303 and "Paused" in _said(paused)
    kept = RoutineStore(thoth.db).get(routine.id)
    assert kept is not None and kept.state == "paused" and kept.paused_why == "paused by slack:U1"
    page = dana.get("/routines").text
    assert "paused by slack:U1" in page and f"/routines/{routine.id}/resume" in page
    again = dana.post(f"/routines/{routine.id}/pause", data={csrf.FIELD: FORM_TOKEN})
    assert again.status_code == 409 and "paused already" in again.text
    resumed = dana.post(f"/routines/{routine.id}/resume", data={csrf.FIELD: FORM_TOKEN})
    assert resumed.status_code == 303 and "Resumed" in _said(resumed)
    kept = RoutineStore(thoth.db).get(routine.id)
    assert kept is not None and kept.state == "active"
    assert kept.next_run_at is not None and kept.next_run_at > time.time()
    ran = dana.post(f"/routines/{routine.id}/run-now", data={csrf.FIELD: FORM_TOKEN})
    assert ran.status_code == 303
    kept = RoutineStore(thoth.db).get(routine.id)
    assert kept is not None and kept.next_run_at is not None
    assert kept.next_run_at <= time.time()
    gone = dana.post(f"/routines/{routine.id}/delete", data={csrf.FIELD: FORM_TOKEN})
    assert gone.status_code == 303 and "Deleted" in _said(gone)
    assert RoutineStore(thoth.db).get(routine.id) is None
    actions = [(entry.action, entry.actor, entry.target) for entry in thoth.audit.entries()
               if entry.action.startswith("routine.")]
    assert sorted(actions) == sorted((action, "slack:U1", f"routine:{routine.id}") for action in (
        "routine.pause", "routine.resume", "routine.run_now", "routine.delete"))
    assert all(entry.origin.startswith("console ") for entry in thoth.audit.entries()
               if entry.action.startswith("routine."))


def test_a_routine_that_is_not_yours_is_refused_but_a_founder_may(
    signed_in: Client, thoth: Thoth,
) -> None:
    routine = _made(thoth, "U1", "dana", "post yesterday's decisions")
    refused = signed_in(ERIN).post(f"/routines/{routine.id}/delete",
                                   data={csrf.FIELD: FORM_TOKEN})
    assert refused.status_code == 409 and "not yours" in refused.text
    assert signed_in(ERIN).post("/routines/nosuch/pause",
                                data={csrf.FIELD: FORM_TOKEN}).status_code == 409
    assert RoutineStore(thoth.db).get(routine.id) is not None
    assert not [e for e in thoth.audit.entries() if e.action.startswith("routine.")]
    paused = signed_in(FRANK).post(f"/routines/{routine.id}/pause",
                                   data={csrf.FIELD: FORM_TOKEN})
    assert paused.status_code == 303
    (entry,) = [e for e in thoth.audit.entries() if e.action == "routine.pause"]
    assert entry.actor == "slack:U9"


def test_signed_out_the_page_asks_to_sign_in(thoth: Thoth) -> None:
    from bridge.console.dependencies import console_dependencies
    from bridge.console.web_app import console_app
    from tests.integration.console_sessions import SECRET

    console = console_app(console_dependencies(thoth), secret=SECRET, login=None)
    with TestClient(console, follow_redirects=False) as browser:
        assert browser.get("/routines").status_code == 401
        assert browser.post("/routines/x/pause", data={}).status_code == 401
