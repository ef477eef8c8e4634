"""What recall does beyond its two searches, each switchable, so each can be measured
alone (`bench/locomo_recall.py --levers …`) and turned off if a team's memory shows it
hurts. ``RECALL_LEVERS`` names the ones to use: "default", "all", "none", or names.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from layers.shared.errors import BadInput


@dataclass(frozen=True)
class RecallLevers:
    # A turn found only by its words gets its real cosine, not the 0 that absence from
    # the semantic list gives (read from the vectors already in memory: cheap).
    cosines_for_word_matches: bool = True
    # A turn found only by meaning gets its real word score (on SQLite read from the one
    # full-text pass the word search makes; on PostgreSQL a second query by rowid).
    word_scores_for_close_matches: bool = True
    # A turn said by someone the question names is preferred (named_people.py).
    named_speakers: bool = True
    # A turn said inside a date the question names is preferred (named_dates.py).
    named_dates: bool = True
    # Each search's scores scaled from 0 to its best, not min-max over its candidates
    # (ranking.scaled_from_zero).
    scaled_from_zero: bool = True
    # A turn of several sentences is embedded one sentence a vector (chunking.py). Read
    # when a turn is remembered, not when recalled: measured alone by importing again.
    sentence_units: bool = True
    # A turn is found by the words of the turn before it in its thread too, at half
    # weight (store.py fills them; an answer is often found by its question's words).
    words_of_the_turn_before: bool = True
    # Thread context reaches two turns away at half the share of one turn away
    # (ranking.with_thread_context): in a thread of two people the turn two away is the
    # same person going on (A, B, A); in a team's thread, the message after a reply.
    context_two_turns_away: bool = True
    # A name the question gives means the person the place's turns call by it ("Kate"
    # for the account "Emi": called_names.py): named_speakers prefers their turns, and
    # the question is embedded with the name their turns carry ("Emi's hobbies").
    names_people_go_by: bool = True

    @classmethod
    def named(cls, text: str) -> RecallLevers:
        """The levers a comma-separated list names ("default", "all", "none", or names)."""
        wanted = {part.strip() for part in text.split(",") if part.strip()}
        names = {field.name for field in fields(cls)}
        if wanted in ({"default"}, set()):
            return cls()
        if wanted in ({"all"}, {"none"}):
            return cls(**dict.fromkeys(names, wanted == {"all"}))
        unknown = wanted - names
        if unknown:
            raise BadInput(f"RECALL_LEVERS: no lever {sorted(unknown)[0]!r}; the levers are"
                           f" {', '.join(sorted(names))}, or default, all or none")
        return cls(**{name: name in wanted for name in names})
