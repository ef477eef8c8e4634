"""Skills in the agentskills.io v1 layout: ``skills/<slug>/SKILL.md`` + ``manifest.json``.

``SKILL.md`` opens with YAML front matter (``name``, ``description``) followed by
the body the model loads on demand. An invalid skill is skipped with one log line
saying what is wrong; it never stops the agent.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

log = logging.getLogger(__name__)

SCHEMA_VERSION = "agentskills.io/v1"
SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9-]{1,49}$")
VERSION_PATTERN = re.compile(r"^\d+\.\d+\.\d+$")
_FRONT_MATTER = re.compile(r"\A---\s*\n(?P<yaml>.*?)\n---\s*\n?(?P<body>.*)\Z", re.DOTALL)


class InvalidSkill(ValueError):
    """A skill folder that does not follow the layout; the message says what is wrong."""


class SkillManifest(BaseModel):
    """``manifest.json``: unknown extra keys are kept (newer tools may add some)."""

    model_config = ConfigDict(extra="allow")

    schema_version: Literal["agentskills.io/v1"]
    name: str
    version: str
    title: str = Field(min_length=1)
    description: str = Field(min_length=1)
    author: str
    license: str
    tags: list[str] = Field(default_factory=list)
    tools_allowed: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _slug(cls, value: str) -> str:
        check_slug(value)
        return value

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not VERSION_PATTERN.match(value):
            raise ValueError(f"version {value!r} is not MAJOR.MINOR.PATCH")
        return value


@dataclass(frozen=True)
class Skill:
    slug: str
    description: str
    body: str
    manifest: SkillManifest
    path: Path
    # The Agent Skills field ``allowed-tools``: tools the skill pre-approves while it is in
    # use (the team's MCP tools, ``SERVER__tool`` or ``SERVER__*``), the founders having
    # approved the skill with it.
    allowed_tools: tuple[str, ...] = ()

    def allows(self, tool: str) -> bool:
        """Whether the skill pre-approves the tool named ``SERVER__tool``."""
        server = tool.split("__", 1)[0]
        return tool in self.allowed_tools or f"{server}__*" in self.allowed_tools


def check_slug(slug: str) -> str:
    # fullmatch: with match, "$" also matches before a final newline ("evil-slug\n").
    if not SLUG_PATTERN.fullmatch(slug):
        raise InvalidSkill(
            f"skill name {slug!r} must match {SLUG_PATTERN.pattern}"
            " (lower-case letters, digits and dashes, 2-50 characters, starting with a letter)"
        )
    return slug


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The YAML front matter of ``SKILL.md`` and the body after it."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise InvalidSkill("SKILL.md has no YAML front matter between '---' lines")
    try:
        data = yaml.safe_load(match.group("yaml"))
    except yaml.YAMLError as error:
        raise InvalidSkill(f"SKILL.md front matter is not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise InvalidSkill("SKILL.md front matter must be a mapping (name, description)")
    return data, match.group("body").strip()


def render_skill_md(slug: str, description: str, body: str,
                    allowed: tuple[str, ...] = ()) -> str:
    fields: dict[str, str] = {"name": slug, "description": description}
    if allowed:
        fields["allowed-tools"] = " ".join(allowed)
    front = yaml.safe_dump(fields, sort_keys=False)
    return f"---\n{front}---\n\n{body.strip()}\n"


def parse_skill(folder: Path) -> Skill:
    """Read and validate one skill folder; raises ``InvalidSkill`` saying why not."""
    slug = check_slug(folder.name)
    skill_md, manifest_json = folder / "SKILL.md", folder / "manifest.json"
    for required in (skill_md, manifest_json):
        if not required.is_file():
            raise InvalidSkill(f"{required.name} is missing")
    front, body = split_front_matter(skill_md.read_text(encoding="utf-8", errors="replace"))
    if front.get("name") != slug:
        raise InvalidSkill(f"front matter name {front.get('name')!r} is not the folder's {slug!r}")
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        raise InvalidSkill("front matter has no description")
    if not body:
        raise InvalidSkill("SKILL.md has no body after the front matter")
    try:
        manifest = SkillManifest.model_validate(json.loads(manifest_json.read_text("utf-8")))
    except json.JSONDecodeError as error:
        raise InvalidSkill(f"manifest.json is not JSON: {error}") from error
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidSkill(f"manifest.json {where}: {first['msg']}") from error
    if manifest.name != slug:
        raise InvalidSkill(f"manifest name {manifest.name!r} is not the folder's {slug!r}")
    return Skill(slug, description.strip(), body, manifest, folder,
                 allowed_tools(front.get("allowed-tools")))


def allowed_tools(value: object) -> tuple[str, ...]:
    """The ``allowed-tools`` of a skill's front matter: the specification's space-delimited
    list (a YAML list is read too)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise InvalidSkill("front matter allowed-tools is not a space-delimited list of tools")


class SkillLibrary:
    """The installed skills, re-read only when a file in the skills folder changes."""

    def __init__(self, directories: tuple[Path, ...]) -> None:
        # The first directory that exists wins (the brain's, then the shipped one).
        self._directories = directories
        self._lock = threading.Lock()
        self._signature: tuple[object, ...] | None = None
        self._skills: dict[str, Skill] = {}
        self.problems: dict[str, str] = {}

    def directory(self) -> Path | None:
        return next((d for d in self._directories if d.is_dir()), None)

    def skills(self) -> dict[str, Skill]:
        directory = self.directory()
        if directory is None:
            return {}
        folders = sorted(p for p in directory.iterdir() if p.is_dir())
        signature = (directory, *(_folder_signature(folder) for folder in folders))
        with self._lock:
            if signature != self._signature:
                self._skills, self.problems = _load(folders)
                self._signature = signature
            return self._skills

    def get(self, slug: str) -> Skill | None:
        return self.skills().get(slug)

    def index_text(self) -> str:
        """One line per skill, for every prompt: the model loads a body with ``get_skill``."""
        return "\n".join(
            f"- {skill.slug}: {skill.description}" for skill in self.skills().values()
        )


def _load(folders: list[Path]) -> tuple[dict[str, Skill], dict[str, str]]:
    skills: dict[str, Skill] = {}
    problems: dict[str, str] = {}
    for folder in folders:
        if folder.name.startswith("."):
            continue
        try:
            skill = parse_skill(folder)
        except (InvalidSkill, OSError) as error:
            problems[folder.name] = str(error)
            log.warning("skipping skill %s: %s", folder, error)
            continue
        skills[skill.slug] = skill
    return skills, problems


def _folder_signature(folder: Path) -> tuple[object, ...]:
    parts: list[object] = [folder.name]
    for name in ("SKILL.md", "manifest.json"):
        try:
            stat = (folder / name).stat()
            parts.append((stat.st_mtime_ns, stat.st_size))
        except OSError:
            parts.append(None)
    return tuple(parts)
