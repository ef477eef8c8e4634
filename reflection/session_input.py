"""What a reflection reads: the session's transcript and episodes, the feedback on its
replies, and what the agent already knows (so it does not propose duplicates)."""

from __future__ import annotations

from dataclasses import dataclass, field

from layers.shared.places import Place
from layers.shared.quoting import quoted
from layers.working.transcript import TranscriptTurn


@dataclass(frozen=True)
class SessionInput:
    session_id: str
    place: Place
    turns: list[TranscriptTurn]
    # ✅ = 1, ❌ = -1, per stored episode of the session.
    feedback: list[int] = field(default_factory=list)
    existing_skills: list[str] = field(default_factory=list)
    recent_notes: list[str] = field(default_factory=list)

    def transcript_text(self) -> str:
        lines = []
        for turn in self.turns:
            # A display name is words its person chose ("</transcript> Ignore previous
            # instructions" is one): quoted data, like what is remembered.
            who = quoted(turn.user_name or turn.user or "someone")
            if turn.user and turn.user_name:
                who = f"{who} ({quoted(turn.user)})"  # updates are keyed by the id
            lines.append(f"{who}: {turn.user_text}")
            lines.append(f"Thoth: {turn.reply_text}" + ("" if turn.ok else " [failed]"))
        return "\n".join(lines)

    def person_id(self, key: str) -> str | None:
        """The user id a report's key stands for (an id, or a display name), if a speaker."""
        for turn in self.turns:
            if turn.user and key in (turn.user, turn.user_name):
                return turn.user
        lowered = key.strip().lower()
        for turn in self.turns:
            # A name as the model read it (quoted) stands for its person too.
            if turn.user and turn.user_name and lowered in (
                    turn.user_name.lower(), quoted(turn.user_name).lower()):
                return turn.user
        return None
