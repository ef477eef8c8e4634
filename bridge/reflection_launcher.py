"""Run ``thoth reflect SESSION_ID`` as a separate process, under a timeout.

A hung or crashing reflection cannot hurt the bridge or the chat: it is another
process, killed when its time is up (its state stays "running" and a later sweep
retries it). The child gets the parent's settings whole, as JSON in its environment.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from bridge.settings import SETTINGS_JSON_VARIABLE, Settings

log = logging.getLogger(__name__)



def child_environment(settings: Settings) -> dict[str, str]:
    """The parent's environment (PATH, locale, proxies) and its settings, whole, as JSON:
    the child sees exactly the configuration the parent was given."""
    return {**os.environ, SETTINGS_JSON_VARIABLE: settings.to_json()}


def run_reflection(
    settings: Settings, session_id: str, *, summary: bool, claimed: bool = False
) -> tuple[int, str]:
    """Reflect on a session in a child process; returns its exit code and what it printed.
    ``claimed``: the caller (a worker) has claimed the run already."""
    # Isolated (-I): `python -m` would put the working directory first on the import
    # path, and a `secrets.py` or `json.py` where someone ran `thoth serve` would
    # replace the standard library's in the child. -I leaves out the working directory,
    # PYTHON* variables and the user's site-packages; the installed Thoth and the
    # standard library are all the child imports. It runs in THOTH_HOME, which is
    # Thoth's own, whatever directory the parent was started in.
    command = [sys.executable, "-I", "-m", "bridge", "reflect", session_id]
    if summary:
        command.append("--summary")
    if claimed:
        command.append("--claimed")
    try:
        done = subprocess.run(
            command,
            cwd=settings.thoth_home,
            env=child_environment(settings),
            capture_output=True,
            text=True,
            timeout=settings.reflection_timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        log.error(
            "reflection on session %s timed out after %.0fs",
            session_id,
            settings.reflection_timeout_s,
        )
        return -1, ""
    if done.returncode != 0:
        log.error("reflection on session %s failed: %s", session_id, done.stderr.strip()[-500:])
    return done.returncode, done.stdout
