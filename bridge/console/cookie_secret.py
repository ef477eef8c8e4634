"""What the console's session cookies are signed with: CONSOLE_SECRET when it is set, else
a secret made on the first start and kept in THOTH_HOME, so a restart signs nobody out.

Decided:
- The kept file (``FILE``) is its owner's alone from its first byte: the secret is written
  to a scratch file created 0600, then linked into place, so no reader ever finds it
  half-written or readable by others, and of two processes starting together the first
  to link wins and the other reads its secret.
- A kept file that others may read, or that does not hold a secret, is refused with one
  line (``ConfigurationError``), never replaced: a new secret signs everyone out, and one
  others could read may already be known, so the operator decides (``chmod 600`` it, or
  delete it for a new one, or set CONSOLE_SECRET).
- Replicas on different machines each keep their own file: they still want one
  CONSOLE_SECRET, the same on every replica.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path

from pydantic import SecretStr

from layers.shared.errors import ConfigurationError

FILE = "console_secret"
# What a kept secret looks like: ``secrets.token_urlsafe(32)``, or any as long of its kind.
_SECRET = re.compile(r"[A-Za-z0-9_-]{32,}")


def cookie_secret(configured: SecretStr | None, home: Path) -> str:
    """CONSOLE_SECRET, else the one kept in ``home`` (made there on the first start)."""
    if configured is not None and configured.get_secret_value():
        return configured.get_secret_value()
    path = home / FILE
    try:
        try:
            return _read(path)
        except FileNotFoundError:
            return _made(path) or _read(path)
    except OSError as error:
        raise ConfigurationError(
            f"cannot keep the console's secret in {path}: {error.strerror or error};"
            " set CONSOLE_SECRET") from None


def _read(path: Path) -> str:
    """The kept secret (``FileNotFoundError`` when there is none yet)."""
    found = os.stat(path, follow_symlinks=False)
    if not stat.S_ISREG(found.st_mode):
        raise ConfigurationError(f"{path} is not a file: remove it, or set CONSOLE_SECRET")
    if found.st_mode & 0o077:
        raise ConfigurationError(
            f"{path} can be read by other users of this machine: `chmod 600 {path}`,"
            " or delete it for a new secret (everyone signs in again)")
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) else "not text"
        raise ConfigurationError(f"cannot read the console's secret in {path}: {why};"
                                 " fix it, or delete it for a new secret") from None
    if not _SECRET.fullmatch(text):
        raise ConfigurationError(
            f"{path} does not hold the console's secret: delete it for a new one"
            " (everyone signs in again), or set CONSOLE_SECRET")
    return text


def _made(path: Path) -> str | None:
    """A new secret, written to ``path``; None when another process made it first."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(32)
    scratch = path.with_name(f".{FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    # 0600 from the start (O_EXCL: never a file someone placed there first), whatever the
    # umask: the mode given to open only loses bits to it, fchmod sets them.
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as file:
            os.fchmod(file.fileno(), 0o600)
            file.write(secret + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(scratch, path)  # never replaces: the first process's secret stays
        except FileExistsError:
            return None
        return secret
    finally:
        scratch.unlink(missing_ok=True)
