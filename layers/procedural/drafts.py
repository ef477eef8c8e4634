"""Skill drafts: proposed, then approved (written and committed), rejected or expired.

A draft lives in the database until a human decides; nothing reaches the brain's tree
before that. A draft for a slug that is already installed proposes its next
version instead of overwriting it. Every state change records who and when.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from layers.procedural.brain import Author, Brain
from layers.procedural.skills import (
    SCHEMA_VERSION,
    InvalidSkill,
    SkillLibrary,
    check_slug,
    render_skill_md,
)
from layers.shared.errors import BadInput
from layers.shared.redaction import redact
from layers.shared.storage.database import Database

log = logging.getLogger(__name__)

DRAFT_LIFETIME_S = 7 * 86_400
# A body shorter than this is a wish, not a procedure anyone could follow.
MIN_BODY_CHARS = 120
MAX_BODY_CHARS = 20_000
MAX_DESCRIPTION_CHARS = 300
FIRST_VERSION = "1.0.0"

Clock = Callable[[], float]


class DraftState(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    EXPIRED = "expired"


@dataclass(frozen=True)
class Draft:
    id: str
    slug: str
    version: str
    base_version: str | None
    title: str
    description: str
    body: str
    tags: tuple[str, ...]
    state: DraftState
    proposed_by: str | None
    proposed_at: float
    session_id: str | None = None
    decided_by: str | None = None
    decided_at: float | None = None
    commit_sha: str | None = None
    # The Agent Skills ``allowed-tools``: the team's tools it pre-approves while in use.
    allowed_tools: tuple[str, ...] = ()


_COLUMNS = (
    "id, slug, version, base_version, title, description, body, tags, state, proposed_by,"
    " proposed_at, session_id, decided_by, decided_at, commit_sha, allowed_tools"
)


class SkillDrafts:
    def __init__(
        self, db: Database, brain: Brain, library: SkillLibrary, *, clock: Clock = time.time
    ) -> None:
        self._db = db
        self._brain = brain
        self._library = library
        self._clock = clock

    def propose(
        self,
        slug: str,
        description: str,
        body: str,
        *,
        title: str | None = None,
        tags: tuple[str, ...] = (),
        proposed_by: str | None = None,
        session_id: str | None = None,
        allowed_tools: tuple[str, ...] = (),
    ) -> Draft:
        """Store a pending draft (redacted); raises ``BadInput`` if it breaks a rule.
        ``allowed_tools``: the team's tools (``SERVER__tool``, ``SERVER__*``) it would
        pre-approve while in use, shown to the founders who decide."""
        try:
            check_slug(slug)
        except ValueError as error:
            raise BadInput(str(error)) from error
        body, description = redact(body.strip()), redact(" ".join(description.split()))
        if not description or len(description) > MAX_DESCRIPTION_CHARS:
            raise BadInput(f"a skill needs a description of 1-{MAX_DESCRIPTION_CHARS} characters")
        if not MIN_BODY_CHARS <= len(body) <= MAX_BODY_CHARS:
            raise BadInput(
                f"a skill body must be {MIN_BODY_CHARS}-{MAX_BODY_CHARS} characters;"
                f" this one is {len(body)}"
            )
        installed = self._library.get(slug)
        base = installed.manifest.version if installed else None
        draft = Draft(
            id=uuid.uuid4().hex[:10],
            slug=slug,
            version=_next_version(base),
            base_version=base,
            title=title or slug.replace("-", " ").capitalize(),
            description=description,
            body=body,
            tags=tuple(tags),
            state=DraftState.PENDING,
            proposed_by=proposed_by,
            proposed_at=self._clock(),
            session_id=session_id,
            allowed_tools=_checked_tools(allowed_tools),
        )
        with self._db.write() as conn:
            conn.execute(
                f"INSERT INTO skill_drafts ({_COLUMNS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _row(draft),
            )
        return draft

    def get(self, draft_id: str) -> Draft:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM skill_drafts WHERE id = ?", (draft_id,)
            ).fetchone()
        if row is None:
            raise BadInput(
                f"no skill draft {draft_id!r} (thoth skills list shows the pending ones)"
            )
        return _draft(row)

    def proposed_in(self, session_id: str, slug: str) -> Draft | None:
        """The draft a session already proposed for ``slug`` (reflection runs once)."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM skill_drafts WHERE session_id = ? AND slug = ?",
                (session_id, slug),
            ).fetchone()
        return None if row is None else _draft(row)

    def of_session(self, session_id: str) -> list[Draft]:
        """The drafts a session's reflection proposed."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM skill_drafts WHERE session_id = ?"
                " ORDER BY proposed_at", (session_id,)).fetchall()
        return [_draft(row) for row in rows]

    def list(self, state: DraftState | None = DraftState.PENDING) -> list[Draft]:
        query = f"SELECT {_COLUMNS} FROM skill_drafts"
        params: tuple[str, ...] = ()
        if state is not None:
            query, params = query + " WHERE state = ?", (state.value,)
        with self._db.read() as conn:
            rows = conn.execute(query + " ORDER BY proposed_at", params).fetchall()
        return [_draft(row) for row in rows]

    def approve(self, draft_id: str, *, by: str) -> Draft:
        """Write the skill into the brain and commit it; the draft becomes accepted.

        Refused when the installed skill is no longer the version the draft was made
        from (another draft was approved meanwhile) or has uncommitted hand edits:
        approving must never overwrite work nobody has reviewed.

        The draft is decided under the brain's lock, so its commit and its record are one
        step for every other writer. Decided: if the commit was made but the record
        failed (a full disk, the database away), approving again does not refuse the
        skill as "installed now" but finds the draft's own commit (its message names the
        draft) and records that: the draft is accepted once, with the commit that
        installed it, decided by the approver the commit names.
        """
        draft = self._pending(draft_id)
        folder = f"skills/{draft.slug}"
        with self._brain.writing():
            installed = self._library.get(draft.slug)
            current = installed.manifest.version if installed else None
            if current == draft.version and (done := self._committed(draft)) is not None:
                made, approver = done
                log.warning("skill draft %s was committed (%s) but not recorded as accepted;"
                            " recorded now", draft.id, made[:12])
                return self._decide(draft, DraftState.ACCEPTED, approver, made)
            if current != draft.base_version:
                raise BadInput(
                    f"skill draft {draft.id} was made from {draft.slug}"
                    f" {draft.base_version or '(none)'}, but {current or 'no version'} is"
                    " installed now: reject it and propose the change again"
                )
            if (self._brain.path / folder).exists() and self._brain.has_hand_edits(folder):
                raise BadInput(
                    f"{folder} in the brain has uncommitted hand edits: commit or undo them"
                    f" (git -C {self._brain.path} status), then approve again"
                )
            action = (
                f"Update skill {draft.slug} to {draft.version}"
                if draft.base_version
                else f"Add skill {draft.slug} {draft.version}"
            )
            skill_md = render_skill_md(draft.slug, draft.description, draft.body,
                                       draft.allowed_tools)
            manifest = json.dumps(_manifest(draft, by), indent=2) + "\n"
            sha = self._brain.apply(
                {f"{folder}/SKILL.md": skill_md, f"{folder}/manifest.json": manifest},
                f"{action}\n\n{draft.description}\n\n{_why(draft)} proposed by"
                f" {draft.proposed_by or 'reflection'}.\nApproved-by: {by}",
                author=Author(by),
            )
            return self._decide(draft, DraftState.ACCEPTED, by, sha)

    def _committed(self, draft: Draft) -> tuple[str, str] | None:
        """The commit that installed ``draft`` and who approved it, if one did."""
        sha = self._brain.commit_saying(_why(draft))
        if sha is None:
            return None
        message = self._brain.message_of(sha)
        approver = next((line.removeprefix("Approved-by:").strip()
                         for line in message.splitlines() if line.startswith("Approved-by:")),
                        "")
        return sha, approver or "unknown"

    def reject(self, draft_id: str, *, by: str) -> Draft:
        """Reject a pending draft: its text is deleted, who and when are kept."""
        return self._decide(self._pending(draft_id), DraftState.REJECTED, by, None)

    def expire(self) -> int:
        """Mark pending drafts older than seven days expired; returns how many."""
        cutoff = self._clock() - DRAFT_LIFETIME_S
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE skill_drafts SET state = 'expired', body = '', decided_at = ?,"
                " decided_by = 'expiry' WHERE state = 'pending' AND proposed_at < ?",
                (self._clock(), cutoff),
            )
        return cursor.rowcount

    def _pending(self, draft_id: str) -> Draft:
        draft = self.get(draft_id)
        if draft.state is not DraftState.PENDING:
            raise BadInput(
                f"skill draft {draft_id} is already {draft.state.value}"
                f" (by {draft.decided_by or 'nobody'})"
            )
        return draft

    def _decide(self, draft: Draft, state: DraftState, by: str, sha: str | None) -> Draft:
        decided = replace(
            draft,
            state=state,
            decided_by=by,
            decided_at=self._clock(),
            commit_sha=sha,
            body=draft.body if state is DraftState.ACCEPTED else "",
        )
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE skill_drafts SET state = ?, decided_by = ?, decided_at = ?,"
                " commit_sha = ?, body = ? WHERE id = ? AND state = 'pending'",
                (state.value, by, decided.decided_at, sha, decided.body, draft.id),
            )
        if cursor.rowcount != 1:
            raise BadInput(f"skill draft {draft.id} was decided by someone else meanwhile")
        return decided


def move_commit_shas(db: Database, shas: Mapping[str, str]) -> None:
    """Approved drafts whose commit was replayed on other replicas' (the remote was away
    when it was made) point at the replayed commit: the one the remote holds."""
    with db.write() as conn:
        for old, new in shas.items():
            conn.execute("UPDATE skill_drafts SET commit_sha = ? WHERE commit_sha = ?",
                         (new, old))


def remove_skill(brain: Brain, slug: str, *, by: str) -> str | None:
    """Delete an installed skill from the brain, as one commit."""
    try:
        check_slug(slug)  # never "", "..", "../persona": only a folder under skills/
    except InvalidSkill as error:
        raise BadInput(str(error)) from error
    folder = brain.skills_dir / slug
    if not folder.is_dir():
        raise BadInput(f"no installed skill {slug!r} (thoth skills list shows them)")
    files = sorted(p.relative_to(brain.path).as_posix() for p in folder.rglob("*") if p.is_file())
    return brain.apply(
        dict.fromkeys(files),
        f"Remove skill {slug}\n\nWhy: removed by hand.\nApproved-by: {by}",
        author=Author(by),
    )


def _why(draft: Draft) -> str:
    # The words in its commit's message that name the draft (``approve`` finds it by them).
    return f"Why: skill draft {draft.id},"


def _next_version(base: str | None) -> str:
    if base is None:
        return FIRST_VERSION
    major, minor, _ = (int(part) for part in base.split("."))
    return f"{major}.{minor + 1}.0"


def _manifest(draft: Draft, approved_by: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "name": draft.slug,
        "version": draft.version,
        "title": draft.title,
        "description": draft.description,
        "author": draft.proposed_by or "Thoth reflection",
        "license": "proprietary",
        "tags": list(draft.tags),
        "tools_allowed": ["recall"],
        "approved_by": approved_by,
    }


def _row(draft: Draft) -> tuple[Any, ...]:
    return (
        draft.id,
        draft.slug,
        draft.version,
        draft.base_version,
        draft.title,
        draft.description,
        draft.body,
        json.dumps(list(draft.tags)),
        draft.state.value,
        draft.proposed_by,
        draft.proposed_at,
        draft.session_id,
        draft.decided_by,
        draft.decided_at,
        draft.commit_sha,
        " ".join(draft.allowed_tools),
    )


def _draft(row: tuple[Any, ...]) -> Draft:
    (
        draft_id, slug, version, base, title, description, body, tags, state,
        proposed_by, proposed_at, session_id, decided_by, decided_at, sha, allowed,
    ) = row
    return Draft(
        draft_id, slug, version, base, title, description, body, tuple(json.loads(tags)),
        DraftState(state), proposed_by, proposed_at, session_id, decided_by, decided_at, sha,
        tuple(str(allowed).split()),
    )


# A tool a skill may pre-approve: the team's server's tool, or all of one server's.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,30}__(\*|[A-Za-z0-9_.-]{1,64})$")


def is_tool_name(tool: str) -> bool:
    """Whether ``tool`` names a team's tool as a skill's ``allowed-tools`` may."""
    return bool(_TOOL_NAME.match(tool))


def _checked_tools(tools: tuple[str, ...]) -> tuple[str, ...]:
    for tool in tools:
        if not is_tool_name(tool):
            raise BadInput(f"allowed-tools names a team's tool as SERVER__tool or SERVER__*;"
                           f" {tool!r} is neither")
    return tuple(dict.fromkeys(tools))
