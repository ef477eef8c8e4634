"""The reflection report (DESIGN.md "Reflection"): its schema, and lenient parsing.

The model is asked for this object through a tool whose input schema is generated
from ``Reflection``. What comes back is validated leniently where that is safe
(code fences stripped, the largest JSON object taken, missing optional fields as
nulls) and refused otherwise, keeping the raw text for debugging.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from layers.shared.errors import BadInput

MAX_MEMORY_NOTES = 5
Outcome = Literal["success", "partial", "failure"]
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$", re.MULTILINE)


class Reflection(BaseModel):
    """What the agent concludes about one session."""

    model_config = ConfigDict(extra="ignore")

    outcome: Outcome
    what_worked: str | None = None
    what_didnt: str | None = None
    should_skill: bool = False
    skill_slug: str | None = None
    skill_description: str | None = None
    skill_body: str | None = None
    # The team's tools (``SERVER__tool``) the skill's steps call that change something:
    # its Agent Skills ``allowed-tools``, run without asking while it is in use once the
    # founders approve it.
    skill_allowed_tools: list[str] = Field(default_factory=list, description=(
        "The team's tools (SERVER__tool) the skill's steps call that may change something,"
        " to run without asking while the skill is in use; empty unless the session"
        " showed they are needed"))
    memory_notes: list[str] = Field(default_factory=list)
    persona_observations: list[str] = Field(default_factory=list)
    next_check_at: datetime | None = None
    user_model_updates: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("memory_notes", "persona_observations", "skill_allowed_tools",
                     mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        return [] if value is None else value

    @field_validator("user_model_updates", mode="before")
    @classmethod
    def _none_is_empty_map(cls, value: object) -> object:
        return {} if value is None else value

    @field_validator("should_skill", mode="before")
    @classmethod
    def _none_is_false(cls, value: object) -> object:
        return False if value is None else value


def tool_schema() -> dict[str, Any]:
    """The JSON schema the model's ``report_reflection`` tool input must follow."""
    schema = Reflection.model_json_schema()
    schema.pop("title", None)
    return schema


def parse_report(raw: str | dict[str, Any]) -> Reflection:
    """A ``Reflection`` from the model's output; ``BadInput`` if nothing valid is in it."""
    data = raw if isinstance(raw, dict) else _largest_object(_FENCE.sub("", raw.strip()))
    try:
        return Reflection.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "report"
        raise BadInput(f"the reflection report is invalid: {where}: {first['msg']}") from error


def _largest_object(text: str) -> dict[str, Any]:
    decoder = json.JSONDecoder()
    best: dict[str, Any] | None = None
    best_length = -1
    for start, char in enumerate(text):
        if char != "{":
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and end - start > best_length:
            best, best_length = value, end - start
    if best is None:
        raise BadInput("the reflection report holds no JSON object")
    return best
