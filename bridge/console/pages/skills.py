"""Skills and persona: what is installed, the drafts waiting (each as a diff against the
skill it would replace), the brain's history with what each commit changed, and undoing
one change (a new commit). Deciding and undoing are founders' and the operator's."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.pages.notes import withdrawn
from bridge.console.slack_cards import show_draft_decided, show_note_decided
from layers.notes.store import Note
from layers.procedural.brain_history import (
    BrainCommit,
    diff_of,
    history,
    memory_lines_added,
    revert,
)
from layers.procedural.drafts import Draft, DraftState
from layers.procedural.skills import Skill
from layers.shared.errors import BadInput

HISTORY = 30


@dataclass(frozen=True)
class PendingDraft:
    draft: Draft
    # The draft's body against the installed skill's ("" before: a new skill).
    diff: str


@dataclass(frozen=True)
class SkillsView:
    installed: list[Skill]
    pending: list[PendingDraft]
    commits: list[BrainCommit]


async def skills_view(parts: ConsoleDependencies) -> SkillsView:
    def read(stores: ConsoleStores) -> SkillsView:
        installed = stores.skills.skills()
        pending = [
            PendingDraft(draft, _diff(installed.get(draft.slug), draft))
            for draft in stores.drafts.list(DraftState.PENDING)
        ]
        return SkillsView(sorted(installed.values(), key=lambda skill: skill.slug), pending,
                          history(stores.brain, HISTORY))

    return await parts.stores.run(read)


async def commit_diff(parts: ConsoleDependencies, sha: str) -> str:
    return await parts.stores.run(lambda stores: diff_of(stores.brain, sha))


async def decide(parts: ConsoleDependencies, user: SignedInPerson, draft_id: str, *, approve: bool,
                 origin: str) -> Draft:
    def change(stores: ConsoleStores) -> Draft:
        draft = (stores.drafts.approve if approve else stores.drafts.reject)(
            draft_id, by=user.name)
        stores.audit.record(actor=user.actor,
                            action="skill.approve" if approve else "skill.reject",
                            target=f"draft:{draft_id}", origin=origin,
                            detail=f"{draft.slug} {draft.version}")
        return draft

    decided = await parts.stores.run(change)
    await show_draft_decided(parts, decided)
    return decided


async def undo(parts: ConsoleDependencies, user: SignedInPerson, sha: str,
               origin: str) -> None:
    """Undo one commit of the brain's (``ThothError`` says why it cannot be)."""

    def change(stores: ConsoleStores) -> list[Note]:
        kept_lines = memory_lines_added(stores.brain, sha)
        if kept_lines is not None:
            # A note's commit: undone by withdrawing the notes it kept, as MEMORY.md
            # follows the notes (a revert would leave them kept, out of step).
            return _withdraw_notes_of(stores, user, sha, kept_lines, origin)
        new_sha = revert(stores.brain, sha, by=user.name)
        stores.audit.record(actor=user.actor, action="brain.revert", target=f"commit:{sha}",
                            origin=origin, detail=f"reverted by {new_sha[:10]}")
        return []

    for note in await parts.stores.run(change):
        await show_note_decided(parts, note)


def _diff(installed: Skill | None, draft: Draft) -> str:
    before = installed.body.splitlines(keepends=True) if installed is not None else []
    after = draft.body.splitlines(keepends=True)
    return "".join(difflib.unified_diff(
        before, after, fromfile=f"{draft.slug} {draft.base_version or '(new)'}",
        tofile=f"{draft.slug} {draft.version}"))


def _withdraw_notes_of(stores: ConsoleStores, user: SignedInPerson, sha: str,
                       kept_lines: list[str], origin: str) -> list[Note]:
    kept = stores.notes.store.kept_with_lines(kept_lines)
    if not kept:
        raise BadInput(f"{sha[:10]} kept notes that are no longer kept: nothing to undo")
    return [withdrawn(stores, note.id, by=user.name, actor=user.actor, origin=origin,
                      why=f"its commit {sha[:10]} undone in the console") for note in kept]
