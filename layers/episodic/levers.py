"""What recall does beyond its two searches, each switchable, so each can be measured
alone (`bench/locomo_recall.py --levers …`) and turned off if a team's memory shows it
hurts. All are on by default; ``RECALL_LEVERS`` names the ones to use ("none": none).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from layers.errors import BadInput


@dataclass(frozen=True)
class RecallLevers:
    # Every candidate scored by both searches: a turn found only by its words still gets
    # its real cosine, and one found only by meaning its real word score, instead of
    # the 0 that absence from the other list gives.
    complete_scores: bool = True
    # A turn said by someone the question names is preferred (named_people.py).
    named_speakers: bool = True
    # A turn said inside a date the question names is preferred (named_dates.py).
    named_dates: bool = True
    # Each search's scores scaled from 0 to its best, not min-max over its candidates
    # (ranking.scaled_from_zero).
    scaled_from_zero: bool = True

    @classmethod
    def named(cls, text: str) -> RecallLevers:
        """The levers a comma-separated list names ("all", "none", or names)."""
        wanted = {part.strip() for part in text.split(",") if part.strip()}
        names = {field.name for field in fields(cls)}
        if wanted in ({"all"}, set()):
            return cls()
        if wanted == {"none"}:
            return cls(**dict.fromkeys(names, False))
        unknown = wanted - names
        if unknown:
            raise BadInput(f"RECALL_LEVERS: no lever {sorted(unknown)[0]!r}; the levers are"
                           f" {', '.join(sorted(names))}, or all, or none")
        return cls(**{name: name in wanted for name in names})
