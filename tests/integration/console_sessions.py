"""A console client signed in as someone, as the console's own session cookie says it,
with the session's form token known (for the forms a test posts)."""

from __future__ import annotations

import json
from base64 import b64encode
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import itsdangerous
from starlette.testclient import TestClient

from bridge.access.signed_in import SignedInPerson
from bridge.app import Thoth
from bridge.console import csrf
from bridge.console.dependencies import console_dependencies
from bridge.console.web_app import SESSION_COOKIE, console_app

SECRET = "s" * 32
FORM_TOKEN = "a-form-token"


def session_cookie(person: SignedInPerson) -> str:
    session = {**person.as_session(), csrf.SESSION_KEY: FORM_TOKEN}
    return itsdangerous.TimestampSigner(SECRET).sign(
        b64encode(json.dumps(session).encode())).decode()


@contextmanager
def signed_in_clients(thoth: Thoth) -> Iterator[Callable[[SignedInPerson], TestClient]]:
    """Opens a client of ``thoth``'s console signed in as a person, each closed after."""
    console = console_app(console_dependencies(thoth), secret=SECRET, login=None)
    with ExitStack() as clients:

        def client(person: SignedInPerson) -> TestClient:
            opened = clients.enter_context(TestClient(console, follow_redirects=False))
            opened.cookies.set(SESSION_COOKIE, session_cookie(person))
            return opened

        yield client
