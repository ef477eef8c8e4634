"""What Thoth learns about a Honcho server and key without writing anything.

- The server's version, from ``GET /openapi.json``: the session allowlist that keeps
  identity facts where they were said arrived in Honcho 3.0.12; an older server
  ignores it silently and answers from every session.
- The key's kind, from its JWT claims (Honcho's ``src/security.py``: ``ad`` admin,
  ``w`` workspace): a workspace-scoped key reaches only its own workspace, so
  Thoth's default of one Honcho workspace per Slack workspace needs an admin key.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING

from layers.shared.errors import BackendUnavailable

if TYPE_CHECKING:
    import httpx

SCOPING_VERSION = (3, 0, 12)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


async def server_version(base_url: str, *, timeout_s: float) -> tuple[int, int, int]:
    """The server's version (a read: nothing is created)."""
    import httpx  # only when Honcho is asked: its import is a tenth of a second

    url = base_url.rstrip("/") + "/openapi.json"
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url)
            response.raise_for_status()
            version = str(response.json().get("info", {}).get("version", ""))
    except (httpx.HTTPError, ValueError) as error:
        raise BackendUnavailable(f"cannot read Honcho's version at {url}: {error}") from error
    found = _VERSION.search(version)
    if found is None:
        raise BackendUnavailable(f"Honcho at {base_url} reports no version ({version!r})")
    major, minor, patch = (int(part) for part in found.groups())
    return major, minor, patch


def key_workspace(api_key: str) -> str | None:
    """The workspace a workspace-scoped key is limited to; None for an admin key or a key
    that is not a readable JWT (then Honcho itself decides)."""
    parts = api_key.split(".")
    if len(parts) != 3:
        return None
    try:
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(claims, dict) or claims.get("ad"):
        return None
    workspace = claims.get("w")
    return str(workspace) if workspace else None


async def key_accepted(
    base_url: str, api_key: str | None, workspace_id: str | None, *, timeout_s: float
) -> None:
    """Make one authenticated read, writing nothing; raises when Honcho refuses the key.

    With a fixed workspace its peers are listed (a workspace key may do that); without one
    the workspaces are (one Honcho workspace per Slack workspace needs an admin key, and
    only an admin key may list them). A 404 still means the key was accepted.
    """
    import httpx

    root = base_url.rstrip("/")
    try:
        response, url = await _small_read(root, api_key, workspace_id, timeout_s)
    except httpx.HTTPError as error:
        raise BackendUnavailable(f"cannot reach Honcho at {root}: {error}") from error
    if response.status_code in (401, 403):
        raise BackendUnavailable(
            f"Honcho refused the API key ({response.status_code}): check HONCHO_API_KEY"
            + ("" if workspace_id else " (one workspace per Slack workspace needs an admin"
               " key; a workspace key needs HONCHO_WORKSPACE_ID)")
        )
    if response.status_code >= 400 and response.status_code != 404:
        raise BackendUnavailable(
            f"Honcho answered {response.status_code} to an authenticated read at {url}"
        )


async def answers(
    base_url: str, api_key: str | None, workspace_id: str | None, *, timeout_s: float
) -> None:
    """One small authenticated read (the same as ``key_accepted``'s); raises when Honcho
    cannot be reached or answers as a service that is away (5xx, 408, 429). A refused key
    is an answer: the service is up, and the key's refusal is said where a turn meets it."""
    import httpx

    try:
        response, _ = await _small_read(base_url.rstrip("/"), api_key, workspace_id,
                                        timeout_s)
    except httpx.HTTPError as error:
        raise BackendUnavailable(f"cannot reach Honcho ({type(error).__name__})") from error
    if response.status_code >= 500 or response.status_code in (408, 429):
        raise BackendUnavailable(f"Honcho answered {response.status_code}")


async def _small_read(root: str, api_key: str | None, workspace_id: str | None,
                      timeout_s: float) -> tuple[httpx.Response, str]:
    """One page of one item: a workspace's peers with a fixed workspace (a workspace key
    may list them), else the workspaces (an admin key may). Returns the answer and the URL."""
    import httpx

    url = (f"{root}/v3/workspaces/{workspace_id}/peers/list" if workspace_id
           else f"{root}/v3/workspaces/list")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        return await client.post(url, params={"size": 1}, json={}, headers=headers), url
