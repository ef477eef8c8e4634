"""Who decides what becomes standing context: a proposed note waits for a founder.

A note proposed from a conversation (a 🧠, reflection, "remember …") is kept only once a
founder approves it (a card in the thread, or `thoth notes approve`), unless the
operator set ``MEMORY_NOTES=auto``: then a note resting on founders' own words only is
kept at once, and every other still waits. Keeping it writes its line in MEMORY.md (the
brain's committed record, with who approved); withdrawing a kept note takes the line out.
An edit is a new version that replaces the old (``edit``); nothing is overwritten.
"""

from __future__ import annotations

from collections.abc import Sequence

from layers.notes.store import MAX_NOTE_CHARS, Note, NoteStore
from layers.procedural.memory_notes import MemoryNote, MemoryNotes
from layers.shared.errors import BadInput
from layers.shared.places import Place, Viewer

# What "auto" records as the decider of a note kept without a card.
AUTO_DECIDER = "MEMORY_NOTES=auto"


class NoteGovernance:
    def __init__(
        self, store: NoteStore, record: MemoryNotes, *, founders: Sequence[str], auto: bool
    ) -> None:
        self._store = store
        self._record = record
        self._founders = frozenset(founders)
        self._auto = auto

    @property
    def store(self) -> NoteStore:
        return self._store

    def propose(
        self, text: str, place: Place, *, user: str | None, author_name: str | None,
        source: str, session_id: str | None, speakers: Sequence[str],
    ) -> Note:
        """A proposed note; kept at once only under ``auto`` when every one of
        ``speakers`` (whose words it rests on) is a founder."""
        if not text.strip():
            raise BadInput("a memory note needs some text")
        note = self._store.propose(text, place, user=user, author_name=author_name,
                                   source=source, session_id=session_id)
        if note.status == "proposed" and self._auto and speakers and all(
            speaker in self._founders for speaker in speakers
        ):
            return self.decide(note.id, keep=True, by=AUTO_DECIDER)
        return note

    def visible_from(self, place: Place, user: str | None = None) -> list[Note]:
        """The kept notes said at ``place`` itself (with ``user``, in a DM): what a
        reflection on a conversation there may be shown, whoever read it."""
        return self._store.kept_for(
            Viewer(place.team, place.channel, place.channel_type, user, confined=True)
        )

    def is_founder(self, user: str) -> bool:
        return user in self._founders

    def decide(self, note_id: str, *, keep: bool, by: str) -> Note:
        """Keep or reject a proposed note; a note already decided stays as it was."""
        with self._record.writing():
            return self._decide(note_id, keep=keep, by=by)

    def _decide(self, note_id: str, *, keep: bool, by: str) -> Note:
        note = self._store.get(note_id)
        if note is None:
            raise BadInput(f"no memory note {note_id!r}: `thoth notes list` shows them")
        if note.status != "proposed":
            return note
        if not keep:
            return self._decided(self._store.decide(note.id, "rejected", by=by))
        line, _ = self._record.append_one(MemoryNote(
            note.text, note.author_name or note.user or "Thoth", _where(note.place),
            note.source, approved_by=by,
        ))
        return self._decided(self._store.decide(note.id, "kept", by=by, record_line=line))

    def edit(self, note_id: str, text: str, *, by: str) -> Note:
        """A new version of a proposed or kept note, which replaces it: the old one
        stays, ``replaced`` and pointing at the new, so the chain shows what replaced
        what and when. A kept note's new version is kept (its editor decided it: a
        founder), its line in MEMORY.md replaced; a proposed one's still waits, for a
        founder in the console or the App Home tab (its old card says it was replaced)."""
        if not text.strip():
            raise BadInput("a memory note needs some text")
        with self._record.writing():
            note = self._store.get(note_id)
            if note is None:
                raise BadInput(f"no memory note {note_id!r}: `thoth notes list` shows them")
            if note.status not in ("proposed", "kept"):
                raise BadInput(f"this note is {note.status}: only a waiting or kept note"
                               " can be edited")
            said = " ".join(text.split())
            if len(said) > MAX_NOTE_CHARS:
                raise BadInput(f"a memory note is at most {MAX_NOTE_CHARS} characters; this"
                               f" edit has {len(said)}")
            newer = self._store.propose(text, note.place, user=note.user,
                                        author_name=note.author_name, source=note.source,
                                        session_id=note.session_id)
            if newer.id == note.id:
                return note  # the same words: nothing to replace
            if note.status == "kept":
                if note.record_line:
                    self._record.remove(note.record_line, who=by, why="edited")
                if newer.status == "proposed":
                    newer = self._decide(newer.id, keep=True, by=by)
            self._store.decide(note.id, "replaced", by=by, was=(note.status,),
                               replaced_by=newer.id)
            return newer

    def withdraw(self, note_id: str, *, by: str, why: str) -> Note | None:
        """The person who asked takes it back (a 🧠 removed): a proposed note is rejected,
        a kept one too, and its line leaves MEMORY.md."""
        with self._record.writing():
            # An edited note's newest version is what the asker's 🧠 stands for now.
            versions = self._store.chain(note_id)
            note = versions[-1] if versions else None
            if note is None or note.status not in ("proposed", "kept"):
                return note
            if note.status == "kept" and note.record_line:
                self._record.remove(note.record_line, who=by, why=why)
            return self._store.decide(note.id, "rejected", by=by, was=("proposed", "kept"))

    def purge_team(self, team: str, *, by: str) -> int:
        """Delete every note of a workspace that left, and take its kept notes' lines
        out of MEMORY.md; how many notes."""
        with self._record.writing():
            for note in self._store.kept_of_team(team):
                if note.record_line:
                    self._record.remove(note.record_line, who=by, why="workspace purged")
            return self._store.delete_team(team)

    def forget_of(self, team: str, user: str, session_ids: Sequence[str], *, by: str) -> int:
        """Delete the notes ``user`` asked for and those drawn from ``session_ids`` (they
        asked to be forgotten), taking the kept ones' lines out of MEMORY.md; how many."""
        with self._record.writing():
            notes = self._store.of_person(team, user, session_ids)
            for note in notes:
                if note.status == "kept" and note.record_line:
                    self._record.remove(note.record_line, who=by, why="its author was forgotten")
            return self._store.delete([note.id for note in notes])

    def reject_pending_of(self, session_id: str, *, by: str) -> int:
        """Reject the notes still waiting from a session (its words were forgotten), under
        the same lock as every decision, so a ✅ at that moment cannot keep one."""
        with self._record.writing():
            return self._store.reject_pending_of(session_id, by=by)

    def _decided(self, note: Note | None) -> Note:
        assert note is not None  # decided a moment ago, never deleted
        return note


def _where(place: Place) -> str:
    if place.channel_type == "im":
        return "a DM"
    return f"#{place.channel_name}" if place.channel_name else place.channel
