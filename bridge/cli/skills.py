"""`thoth skills list|show|propose|approve|reject|remove`: skills and their drafts."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.cli.login import login_name
from layers.procedural.drafts import Draft, DraftState, remove_skill
from layers.shared.errors import BadInput, ConfigurationError


def register(commands: Any) -> None:
    parser = commands.add_parser("skills", help="list, show, approve, reject or remove skills")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))

    listing = actions.add_parser("list", help="installed skills and pending drafts")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument("--all", action="store_true", help="decided drafts too")
    listing.set_defaults(handler=run_list)

    show = actions.add_parser("show", help="a skill's or a draft's full text")
    show.add_argument("name", help="an installed skill's name or a draft id")
    show.set_defaults(handler=run_show)

    propose = actions.add_parser("propose", help="propose a skill (a pending draft)")
    propose.add_argument("slug", help="the skill's name: lowercase words joined by hyphens")
    propose.add_argument("--description", required=True,
                         help="one line: when the skill applies")
    propose.add_argument("--body-file", type=Path, required=True, help="Markdown instructions")
    propose.add_argument("--title", help="a heading for it (default: from the slug)")
    propose.add_argument("--by", help="who proposes it (default: your login name)")
    propose.set_defaults(handler=run_propose)

    for name, handler, text in (
        ("approve", run_approve, "approve a draft: write the skill and commit it"),
        ("reject", run_reject, "reject a draft (its text is deleted)"),
    ):
        decide = actions.add_parser(name, help=text)
        decide.add_argument("draft_id", help="the draft's id (thoth skills list shows it)")
        decide.add_argument("--by", help="who decides (default: your login name)")
        decide.set_defaults(handler=handler)

    remove = actions.add_parser("remove", help="delete an installed skill (a commit)")
    remove.add_argument("slug", help="the installed skill's name")
    remove.add_argument("--by", help="who removes it (default: your login name)")
    remove.set_defaults(handler=run_remove)


def run_list(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    app.drafts.expire()
    installed = app.skills.skills()
    drafts = app.drafts.list(None if args.all else DraftState.PENDING)
    if args.json:
        print(
            json.dumps(
                {
                    "skills": [
                        {
                            "name": skill.slug,
                            "version": skill.manifest.version,
                            "description": skill.description,
                        }
                        for skill in installed.values()
                    ],
                    "drafts": [_draft_json(d) for d in drafts],
                    "invalid": app.skills.problems,
                },
                ensure_ascii=False,
            ),
            file=out,
        )
        return 0
    print(f"installed skills ({len(installed)}):", file=out)
    for skill in installed.values():
        print(f"  {skill.slug} {skill.manifest.version}  {skill.description}", file=out)
    for folder, problem in app.skills.problems.items():
        print(f"  {folder}  SKIPPED: {problem}", file=out)
    print(f"drafts ({len(drafts)}):", file=out)
    for draft in drafts:
        print(f"  {_draft_line(draft)}", file=out)
    return 0


def run_show(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    skill = app.skills.get(args.name)
    if skill is not None:
        print(f"{skill.manifest.title} ({skill.slug} {skill.manifest.version})", file=out)
        print(skill.description, file=out)
        print(file=out)
        print(skill.body, file=out)
        return 0
    draft = app.drafts.get(args.name)
    print(_draft_line(draft), file=out)
    print(draft.description, file=out)
    print(file=out)
    print(draft.body or "(the draft's text was deleted when it was decided)", file=out)
    return 0


def run_propose(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    try:
        body = args.body_file.read_text(encoding="utf-8")
    except OSError as error:
        raise BadInput(f"cannot read {args.body_file}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise BadInput(f"{args.body_file} is not valid UTF-8 (byte {error.start}): save it as"
                       " UTF-8") from error
    draft = app.drafts.propose(
        args.slug, args.description, body, title=args.title, proposed_by=args.by or login_name()
    )
    print(f"draft {draft.id}: {draft.slug} {draft.version} awaits approval", file=out)
    return 0


def run_approve(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    _brain_usable(app)
    by = args.by or login_name()
    draft = app.drafts.approve(args.draft_id, by=by)
    app.audit.record(actor=by, action="skill.approve", target=f"draft:{draft.id}",
                     origin="cli", detail=f"{draft.slug} {draft.version}")
    commit = (draft.commit_sha or "")[:10]
    print(f"approved {draft.slug} {draft.version} (commit {commit})", file=out)
    return 0


def run_reject(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    by = args.by or login_name()
    draft = app.drafts.reject(args.draft_id, by=by)
    app.audit.record(actor=by, action="skill.reject", target=f"draft:{draft.id}",
                     origin="cli", detail=f"{draft.slug} {draft.version}")
    print(f"rejected draft {draft.id} ({draft.slug} {draft.version})", file=out)
    return 0


def run_remove(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    _brain_usable(app)
    by = args.by or login_name()
    sha = remove_skill(app.brain, args.slug, by=by)
    app.audit.record(actor=by, action="skill.remove", target=f"skill:{args.slug}",
                     origin="cli", detail=f"commit {(sha or '')[:10]}")
    print(f"removed {args.slug} (commit {(sha or '')[:10]})", file=out)
    return 0


def _brain_usable(app: Thoth) -> None:
    if app.brain_problem:
        raise ConfigurationError(app.brain_problem)
    app.brain.check()


def _draft_line(draft: Draft) -> str:
    when = datetime.fromtimestamp(draft.proposed_at, UTC).strftime("%Y-%m-%d %H:%M")
    line = (
        f"{draft.id}  {draft.slug} {draft.version}  {draft.state.value}"
        f"  proposed by {draft.proposed_by or 'reflection'} {when} UTC"
    )
    if draft.base_version:
        line += f"  (new version of {draft.base_version})"
    if draft.decided_by:
        line += f"  decided by {draft.decided_by}"
    return line


def _draft_json(draft: Draft) -> dict[str, object]:
    return {
        "id": draft.id,
        "slug": draft.slug,
        "version": draft.version,
        "base_version": draft.base_version,
        "state": draft.state.value,
        "proposed_by": draft.proposed_by,
        "proposed_at": draft.proposed_at,
        "decided_by": draft.decided_by,
        "decided_at": draft.decided_at,
    }
