"""`thoth`: parse the command line, build the app, turn errors into exit codes.

Exit codes: 0 success, 1 configuration or backend problem, 2 bad input (usage,
malformed files, empty queries). Errors go to stderr as one line; data to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar, cast

from dotenv.parser import parse_stream
from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError

from bridge.cli.failures import EXIT_OK, Refusal, refused, said
from bridge.cli.preflight import check_ready_for_turns
from bridge.cli.redacted_output import RedactedOutput
from bridge.settings import Settings, load_settings
from layers.shared.errors import BackendUnavailable, BadInput, ConfigurationError

if TYPE_CHECKING:
    from bridge.app import Thoth
    from layers.shared.embedding.embedder import Embedder

log = logging.getLogger(__name__)

T = TypeVar("T")

EXIT_READER_GONE = 128 + 13  # SIGPIPE's number, as a shell reports a process it ended

Command = Callable[[argparse.Namespace, "Thoth", TextIO], int]
# A command that starts before its app is built (``app_when_asked``): it is given how to
# build it, and closes what it built (`thoth mcp` answers its client's handshake first).
OpensItsApp = Callable[[argparse.Namespace, Settings, Callable[[], "Thoth"], TextIO], int]
# Run before the app is built (which creates THOTH_HOME): raises BadInput or
# ConfigurationError to refuse the command.
BeforeBuild = Callable[[argparse.Namespace, Settings], None]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so ``main`` stays callable."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(f"{self.prog}: {message}")


# Each command's module, in the order the usage lists them, imported only when its
# command runs (or for the whole usage): a command's start pays for its own imports, not
# every command's (bench/cli_start.py; `thoth mcp`'s handshake, bench/mcp_start.py).
COMMAND_MODULES = {name: f"bridge.cli.{name}" for name in (
    "init", "episodes", "recall", "chat", "sessions", "skills", "notes", "doctor", "people",
    "serve", "console", "reflect", "worker", "migrate", "mcp", "tools", "tokens",
    "installations", "routines")}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or ``only`` that command's (the one the line names)."""
    parser = _Parser(
        prog="thoth", description="Thoth, the Slack agent that remembers.",
        epilog="`thoth COMMAND --help` says more about each command.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    # Not required: a bare `thoth` prints this usage (exit 0) instead of an error.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module in COMMAND_MODULES.items():
        if only in (None, name):
            importlib.import_module(module).register(commands)
    return parser


def named_command(argv: Sequence[str]) -> str | None:
    """The command the line names, if it is one: the first word that is not an option
    (the options before a command take no value)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in COMMAND_MODULES else None


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
        words = sys.argv[1:] if argv is None else argv
        _check_arguments_are_utf8(words)
        args = build_parser(named_command(words)).parse_args(words)
    except BadInput as error:
        return _said(error, err)
    if args.version or args.command is None:
        return _without_a_command(args, out)
    _configure_logging(args, err)
    try:
        settings = _ready_settings(args, settings)
        if getattr(args, "app_when_asked", False):
            return _run_opening_its_app(args, settings, embedder, out, err)
        app = _build(settings, embedder)
    except (BadInput, ConfigurationError, BackendUnavailable) as error:
        return _said(error, err)
    command: Command = args.handler

    def run() -> int:
        if getattr(args, "runs_turns", False):
            check_ready_for_turns(app)
        if not getattr(args, "purges_itself", False):
            enforce_retention(app)
        return command(args, app, out)

    try:
        return _saying_errors(run, app.settings.db_path, err)
    finally:
        app.close()


def _run_opening_its_app(args: argparse.Namespace, settings: Settings,
                         embedder: Embedder | None, out: TextIO, err: TextIO) -> int:
    def open_app() -> Thoth:
        app = _build(settings, embedder)
        enforce_retention(app)
        return app

    command: OpensItsApp = args.handler
    return _saying_errors(lambda: command(args, settings, open_app, out), settings.db_path,
                          err)


def _saying_errors(run: Callable[[], int], db_path: Path, err: TextIO) -> int:
    """``run()``, with what it may fail of said as one line and an exit code."""
    try:
        return run()
    except Exception as error:
        line = said(error, db_path)
        if line is None:
            raise
        print(line[0], file=err)
        return line[1]


def _said(error: Refusal, err: TextIO) -> int:
    line, code = refused(error)
    print(line, file=err)
    return code


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
    # While a service is away these say so on every reconnect attempt and every skipped
    # round; the registry of failing services (layers/shared/dependency_health.py) says
    # the outage once, and once when it is over.
    for chatty in ("psycopg.pool", "apscheduler.scheduler"):
        logging.getLogger(chatty).setLevel(logging.INFO if args.verbose else logging.ERROR)


OWN_PACKAGES = frozenset({"bridge", "layers", "reflection", "__main__"})


def _own_records(record: logging.LogRecord) -> bool:
    return record.name.partition(".")[0] in OWN_PACKAGES


def _ready_settings(args: argparse.Namespace, settings: Settings | None) -> Settings:
    """The settings the command runs with, unless the command refuses to start first."""
    settings = _settings(settings)
    # A command may refuse before build() creates THOTH_HOME and its database (`thoth
    # mcp` where the home holds no memory: bridge/cli/mcp.py).
    before_build: BeforeBuild | None = getattr(args, "before_build", None)
    if before_build is not None:
        before_build(args, settings)
    return settings


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
    # Imported here: the app's modules are most of a start's imports, and `thoth mcp`
    # answers its client's handshake before it builds the app (bench/mcp_start.py).
    from bridge.app import build

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
