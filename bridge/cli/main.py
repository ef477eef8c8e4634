"""`thoth`: parse the command line, build the app, turn errors into exit codes.

Exit codes: 0 success, 1 configuration or backend problem, 2 bad input (usage,
malformed files, empty queries). Errors go to stderr as one line; data to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import re
import sqlite3
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TextIO, TypeVar, cast

from dotenv.parser import parse_stream
from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError

from bridge.app import Thoth, build
from bridge.cli import (
    chat,
    console,
    doctor,
    episodes,
    init,
    installations,
    mcp,
    migrate,
    notes,
    people,
    recall,
    reflect,
    serve,
    sessions,
    skills,
    tokens,
    worker,
)
from bridge.cli.preflight import check_ready_for_turns
from bridge.cli.redacted_output import RedactedOutput
from bridge.settings import Settings, load_settings
from layers.shared.embedding.embedder import Embedder
from layers.shared.errors import BackendUnavailable, BadInput, ConfigurationError
from layers.shared.storage.database import DatabaseDamaged

log = logging.getLogger(__name__)

T = TypeVar("T")

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_READER_GONE = 128 + 13  # SIGPIPE's number, as a shell reports a process it ended

Command = Callable[[argparse.Namespace, Thoth, TextIO], int]
# Run before the app is built (which creates THOTH_HOME): raises BadInput or
# ConfigurationError to refuse the command.
BeforeBuild = Callable[[argparse.Namespace, Settings], None]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so ``main`` stays callable."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="thoth", description="Thoth, the Slack agent that remembers.",
        epilog="`thoth COMMAND --help` says more about each command.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    # Not required: a bare `thoth` prints this usage (exit 0) instead of an error.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    init.register(commands)
    episodes.register(commands)
    recall.register(commands)
    chat.register(commands)
    sessions.register(commands)
    skills.register(commands)
    notes.register(commands)
    doctor.register(commands)
    people.register(commands)
    serve.register(commands)
    console.register(commands)
    reflect.register(commands)
    worker.register(commands)
    migrate.register(commands)
    mcp.register(commands)
    tokens.register(commands)
    installations.register(commands)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    settings: Settings | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    embedder: Embedder | None = None,
) -> int:
    """Run one command; returns the exit code (tests call this directly)."""
    out = RedactedOutput(stdout or sys.stdout)
    err = RedactedOutput(stderr or sys.stderr)
    # Code that writes to sys.stdout/sys.stderr itself is redacted too.
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        return _run(argv, settings, cast(TextIO, out), cast(TextIO, err), embedder)


def _run(
    argv: Sequence[str] | None,
    settings: Settings | None,
    out: TextIO,
    err: TextIO,
    embedder: Embedder | None,
) -> int:
    try:
        _check_arguments_are_utf8(sys.argv[1:] if argv is None else argv)
        args = build_parser().parse_args(argv)
    except BadInput as error:
        print(f"error: {error}", file=err)
        return EXIT_BAD_INPUT
    if args.version or args.command is None:
        return _without_a_command(args, out)
    _configure_logging(args, err)
    try:
        app = _start(args, settings, embedder)
    except (BadInput, ConfigurationError, BackendUnavailable) as error:
        print(f"error: {error}", file=err)
        return EXIT_BAD_INPUT if isinstance(error, BadInput) else EXIT_FAILURE
    command: Command = args.handler
    try:
        if getattr(args, "runs_turns", False):
            check_ready_for_turns(app)
        if not getattr(args, "purges_itself", False):
            enforce_retention(app)
        return command(args, app, out)
    except sqlite3.OperationalError as error:
        if not error.sqlite_errorname.startswith("SQLITE_READONLY"):
            raise
        # THOTH_HOME turned read-only while the command ran.
        print(f"error: the database {app.settings.db_path} cannot be written ({error}):"
              " make THOTH_HOME writable, or set it to a writable directory", file=err)
        return EXIT_FAILURE
    except sqlite3.DatabaseError as error:
        if isinstance(error, sqlite3.IntegrityError):
            raise  # a broken rule of ours, not a damaged file
        # Damage found past the file's header, in pages a command reads.
        print(f"error: {DatabaseDamaged(app.settings.db_path, error)}", file=err)
        return EXIT_FAILURE
    except BadInput as error:
        print(f"error: {error}", file=err)
        return EXIT_BAD_INPUT
    except (ConfigurationError, BackendUnavailable) as error:
        print(f"error: {error}", file=err)
        return EXIT_FAILURE
    finally:
        app.close()


def _without_a_command(args: argparse.Namespace, out: TextIO) -> int:
    """``--version``, or a bare ``thoth``: the usage and the command list."""
    if args.version:
        print(f"thoth {version('thoth')}", file=out)
    else:
        build_parser().print_help(file=out)
    return EXIT_OK


def _configure_logging(args: argparse.Namespace, err: TextIO) -> None:
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=err,
    )
    # A command a person runs says its own warnings; the libraries' (a retry, a
    # deprecation) are for -v. A service (serve, worker) logs them all.
    quiet = not args.verbose and not getattr(args, "long_running", False)
    for handler in logging.getLogger().handlers:
        (handler.addFilter if quiet else handler.removeFilter)(_own_records)


OWN_PACKAGES = frozenset({"bridge", "layers", "reflection", "__main__"})


def _own_records(record: logging.LogRecord) -> bool:
    return record.name.partition(".")[0] in OWN_PACKAGES


def _start(args: argparse.Namespace, settings: Settings | None,
           embedder: Embedder | None) -> Thoth:
    """The app the command runs against, unless the command refuses to start first."""
    settings = _settings(settings)
    # A command may refuse before build() creates THOTH_HOME and its database (`thoth
    # mcp` where the home holds no memory: bridge/cli/mcp.py).
    before_build: BeforeBuild | None = getattr(args, "before_build", None)
    if before_build is not None:
        before_build(args, settings)
    return _build(settings, embedder)


def _settings(settings: Settings | None) -> Settings:
    """The settings given, or read; one that cannot be read is a ``ConfigurationError``."""
    if settings is not None:
        return settings

    def read() -> Settings:
        _check_dotenv_lines(Path(".env"))
        return load_settings()

    return _readable(read)


def _build(settings: Settings, embedder: Embedder | None) -> Thoth:
    """The app; a setting that cannot be read is a ``ConfigurationError`` naming it."""
    return _readable(lambda: build(settings, embedder=embedder))


def _readable(make: Callable[[], T]) -> T:
    """``make()``, with pydantic's and dotenv's errors said as one line naming the setting."""
    try:
        return make()
    except ValidationError as error:
        raise ConfigurationError(f"invalid settings: {_first_validation_error(error)}") from None
    except SettingsError as error:
        raise ConfigurationError(f"invalid settings: {_unparsable_setting(error)}") from None
    except UnicodeDecodeError as error:
        raise ConfigurationError(
            f"the .env file is not valid UTF-8 (byte {error.object[error.start]:#x}"
            f" at offset {error.start}): save it as UTF-8"
        ) from None


def _check_dotenv_lines(path: Path) -> None:
    """python-dotenv skips a line it cannot parse with a warning, and the setting on it
    silently keeps its default: refuse the file instead, naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise ConfigurationError(
                f"line {binding.original.line} of {path} is not KEY=value"
                f" ({binding.original.string.strip()[:40]!r}): fix or remove it"
            )


def _check_arguments_are_utf8(argv: Sequence[str]) -> None:
    """Python hands bytes that are not UTF-8 on as lone surrogates, which SQLite, the
    tokenizer and git refuse deep inside a command: refuse them here, before anything."""
    for number, argument in enumerate(argv, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError as error:
            raise BadInput(
                f"argument {number} is not valid UTF-8 (at character {error.start + 1}):"
                " give it as UTF-8"
            ) from None


def enforce_retention(app: Thoth) -> None:
    """Apply EPISODE_RETENTION_DAYS before any command reads or exports episodes.

    The purge is one indexed range delete, cheap enough to run on every start; the
    Slack bridge will also run it daily for a process that stays up.
    """
    days = app.settings.episode_retention_days
    if days > 0:
        removed = app.episodic.purge_older_than(days)
        if removed:
            log.info("retention: purged %d episodes older than %d days", removed, days)


def _unparsable_setting(error: SettingsError) -> str:
    """pydantic-settings says 'error parsing value for field "x" from source "…"'."""
    found = re.search(r'field "(\w+)" from source "(\w+)"', str(error))
    if found is None:
        return str(error)
    field, source = found.groups()
    where = ".env" if source.startswith("DotEnv") else "the environment"
    return f"{field.upper()} (from {where}) is not valid JSON: {error.__cause__ or error}"


def _first_validation_error(error: ValidationError) -> str:
    first = error.errors()[0]
    # A rule across settings has no single setting to name; pydantic's "Value error, "
    # prefix says nothing a person needs.
    message = str(first["msg"]).removeprefix("Value error, ")
    where = ".".join(str(part) for part in first["loc"]).upper()
    return f"{where}: {message}" if where else message


def run() -> None:
    """Console-script entry point.

    A reader that goes away (``thoth episodes export | head``) ends the command quietly,
    with the exit code of a process that SIGPIPE ended, as other Unix tools do. The
    signal itself stays ignored (Python's default): `serve` and every network client
    must see a closed connection as an error, not die of it.
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would flush stdout again at exit and print that it failed.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_READER_GONE
    sys.exit(code)
