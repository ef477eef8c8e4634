"""A loopback Slack Socket Mode server, for the real ``slack_sdk``/``slack_bolt`` client.

Set ``FakeSlack.socket_url`` to ``server.url``: ``apps.connections.open`` then hands that
URL to the client, which opens a plain ``ws://`` connection to this server (the SDK's
builtin client uses TLS only on port 443, so a loopback port works as is).

Like Slack, the server greets every connection with a ``hello`` message. The test then
pushes envelopes to the newest open connection (``send_event``, ``send_command``,
``send_envelope``) and reads the acknowledgements the client sends back
(``acks``, ``wait_for_ack``), each stamped with the moment it arrived. A client that
drops its connection is normal here; ``__exit__`` closes what is left and returns
promptly.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

# The SDK's WebSocket client reads these itself (and ignores NO_PROXY): a test unsets
# them, so that a proxy does not catch loopback.
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")


@dataclass(frozen=True)
class Ack:
    """One acknowledgement: ``{"envelope_id": ..., "payload": {...}?}`` from the client."""

    envelope_id: str
    payload: dict[str, Any] | None
    raw: str
    sent_at: float | None  # time.monotonic() when the envelope went out (None: unknown id)
    received_at: float  # time.monotonic() when the ack arrived
    connection: int  # which connection it came on, numbered in the order they were greeted

    @property
    def elapsed(self) -> float:
        """Seconds from sending the envelope to receiving its ack."""
        if self.sent_at is None:
            raise AssertionError(f"no envelope {self.envelope_id} was sent")
        return self.received_at - self.sent_at


class FakeSocketMode:
    """The server; use as a context manager and put ``url`` where Slack would."""

    def __init__(self, *, app_id: str = "A1", team_id: str = "T1") -> None:
        self.app_id = app_id
        self.team_id = team_id
        self.ticket = uuid.uuid4().hex
        self.acks: list[Ack] = []
        self.other_messages: list[str] = []  # text frames that were not acks
        self.paths: list[str] = []  # the request path of every connection, in order
        self._open: list[ServerConnection] = []
        self._sent_at: dict[str, float] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._server: Server = serve(
            self._serve_connection,
            "127.0.0.1",
            0,
            compression=None,
            ping_interval=None,  # the client pings; the server answers
            close_timeout=1,
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link/?ticket={self.ticket}&app_id={self.app_id}"

    def __enter__(self) -> FakeSocketMode:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)

    # -- connections ----------------------------------------------------------------

    @property
    def connection_count(self) -> int:
        """How many connections were greeted so far (reconnects included)."""
        with self._lock:
            return len(self.paths)

    def wait_for_connection(self, count: int = 1, timeout_s: float = 10.0) -> None:
        """Block until ``count`` connections were greeted and one is still open."""
        with self._lock:
            if not self._lock.wait_for(
                lambda: len(self.paths) >= count and bool(self._open), timeout_s
            ):
                raise AssertionError(
                    f"expected {count} open connections, saw {len(self.paths)} "
                    f"({len(self._open)} open)"
                )

    def close_connections(self, code: int = 1001, reason: str = "going away") -> None:
        """Close every open connection from the server side, as Slack does when it
        rotates a connection (the client may then reconnect through
        ``apps.connections.open``)."""
        with self._lock:
            connections = list(self._open)
        for connection in connections:
            connection.close(code, reason)

    def _serve_connection(self, connection: ServerConnection) -> None:
        request = connection.request
        path = request.path if request is not None else ""
        try:
            connection.send(json.dumps(self._hello()))
            with self._lock:
                number = len(self.paths)
                self.paths.append(path)
                self._open.append(connection)
                self._lock.notify_all()
            for message in connection:
                self._receive(message if isinstance(message, str) else message.decode(), number)
        except ConnectionClosed:
            pass  # the client went away: normal at the end of a test
        finally:
            with self._lock:
                if connection in self._open:
                    self._open.remove(connection)
                self._lock.notify_all()

    def _hello(self) -> dict[str, Any]:
        return {
            "type": "hello",
            "num_connections": 1,
            "debug_info": {
                "host": "applink-fake",
                "build_number": 1,
                "approximate_connection_time": 18060,
            },
            "connection_info": {"app_id": self.app_id},
        }

    def _receive(self, text: str, connection: int) -> None:
        try:
            message = json.loads(text)
        except json.JSONDecodeError:
            message = None
        with self._lock:
            if isinstance(message, dict) and isinstance(message.get("envelope_id"), str):
                envelope_id = message["envelope_id"]
                payload = message.get("payload")
                self.acks.append(Ack(
                    envelope_id=envelope_id,
                    payload=payload if isinstance(payload, dict) else None,
                    raw=text,
                    sent_at=self._sent_at.get(envelope_id),
                    received_at=time.monotonic(),
                    connection=connection,
                ))
            else:
                self.other_messages.append(text)
            self._lock.notify_all()

    # -- envelopes ------------------------------------------------------------------

    def send_envelope(
        self, kind: str, payload: dict[str, Any], *, accepts_response_payload: bool,
        timeout_s: float = 10.0, on: int = -1, **extra: Any,
    ) -> str:
        """Send ``{"type": kind, "envelope_id", "payload", ...}`` on open connection ``on``
        in the order they opened (the newest by default; Slack spreads an app's
        deliveries over its connections), waiting up to ``timeout_s`` for one; returns
        the envelope id."""
        envelope_id = f"env-{next(self._ids):04d}-{uuid.uuid4().hex[:8]}"
        envelope = {
            "type": kind,
            "envelope_id": envelope_id,
            "payload": payload,
            "accepts_response_payload": accepts_response_payload,
            **extra,
        }
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._open) > max(on, -on - 1), timeout_s):
                raise AssertionError(f"no open Socket Mode connection {on} to send to")
            connection = self._open[on]
            self._sent_at[envelope_id] = time.monotonic()
        connection.send(json.dumps(envelope))
        return envelope_id

    def send_event(
        self, event: dict[str, Any], *, event_id: str | None = None, retry_attempt: int = 0,
        retry_reason: str = "", on: int = -1,
    ) -> str:
        """An Events API delivery of ``event``; returns the envelope id."""
        number = next(self._ids)
        body = {
            "token": "verification-token",
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": event_id or f"Ev{number:08d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": "UBOT", "is_bot": True}],
            "is_ext_shared_channel": False,
        }
        return self.send_envelope(
            "events_api", body, accepts_response_payload=False, on=on,
            retry_attempt=retry_attempt, retry_reason=retry_reason,
        )

    def send_command(self, form: dict[str, str]) -> str:
        """A slash command (the form Slack would POST in HTTP mode); returns the envelope id."""
        body = {"team_id": self.team_id, "api_app_id": self.app_id, **form}
        return self.send_envelope("slash_commands", body, accepts_response_payload=True)

    # -- acks -----------------------------------------------------------------------

    def ack_for(self, envelope_id: str) -> Ack | None:
        with self._lock:
            return next((a for a in self.acks if a.envelope_id == envelope_id), None)

    def wait_for_ack(self, envelope_id: str, timeout_s: float = 5.0) -> Ack:
        """Block until the client acknowledged ``envelope_id``; returns the ack."""
        with self._lock:
            found = self._lock.wait_for(
                lambda: next((a for a in self.acks if a.envelope_id == envelope_id), None),
                timeout_s,
            )
            if found is None:
                raise AssertionError(
                    f"no ack for {envelope_id} within {timeout_s} s; "
                    f"acked: {[a.envelope_id for a in self.acks]}"
                )
            return found
