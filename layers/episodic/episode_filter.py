"""Narrowing what a person browses or searches: by place, person, date and feedback.

A filter only narrows: the visibility rule is applied first, always (``sql_predicate``),
so no filter can show what the viewer may not see.
"""

from __future__ import annotations

from dataclasses import dataclass

from layers.episodic.episode import Episode, Feedback


@dataclass(frozen=True)
class EpisodeFilter:
    channel: str | None = None
    user: str | None = None
    # Seconds since the epoch, UTC: from ``since`` (inclusive) to ``until`` (exclusive).
    since: float | None = None
    until: float | None = None
    feedback: Feedback | None = None
    # A person as someone reading names them, lower case: their id, or the name they
    # went by. ``user`` is the id only, for a person's own view of what they said.
    said_by: str | None = None

    @property
    def narrows(self) -> bool:
        return any(value is not None for value in (
            self.channel, self.user, self.since, self.until, self.feedback, self.said_by))

    def admits(self, episode: Episode) -> bool:
        return ((self.channel is None or episode.channel == self.channel)
                and (self.user is None or episode.user == self.user)
                and (self.since is None or episode.created_at >= self.since)
                and (self.until is None or episode.created_at < self.until)
                and (self.feedback is None or episode.feedback == self.feedback)
                and (self.said_by is None or self.said_by in (
                    (episode.user or "").lower(), (episode.user_name or "").lower())))

    def sql(self, alias: str = "e") -> tuple[str, dict[str, object]]:
        """The same conditions as ``admits``, as a WHERE clause and its parameters."""
        conditions = ["1 = 1"]
        params: dict[str, object] = {}
        for column, operator, value in (
                ("channel", "=", self.channel), ('"user"', "=", self.user),
                ("created_at", ">=", self.since), ("created_at", "<", self.until),
                ("feedback", "=", None if self.feedback is None else int(self.feedback))):
            if value is not None:
                name = f"f_{len(params)}"
                conditions.append(f"{alias}.{column} {operator} :{name}")
                params[name] = value
        if self.said_by is not None:
            conditions.append(f'(lower({alias}."user") = :f_said_by'
                              f" OR lower({alias}.user_name) = :f_said_by)")
            params["f_said_by"] = self.said_by
        return " AND ".join(conditions), params
