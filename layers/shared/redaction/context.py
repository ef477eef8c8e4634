"""Secrets known by what surrounds them: a key name, a header, a URL, a command, a sentence.

These have no shape of their own (a password can be any word), so each rule finds
the words that announce a secret and takes the value after them. They run after the
vendor and catalogue rules, which label the tokens they know first; a value that is
already a marker is skipped.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from layers.shared.redaction.rules import NOT_A_MARKER, Rule

# A bare "Bearer xyz" needs a long token with a digit so "the bearer of bad news" is
# left alone; after "Authorization:" any token counts.
_AUTHORIZATION = re.compile(
    r"""
    (?:
        authorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|token|basic)
      | \bbearer(?=[ \t]+[A-Za-z0-9._~+/\-]*\d)(?=[ \t]+[A-Za-z0-9._~+/\-]{16})
    )
    [ \t]+
    """
    + NOT_A_MARKER
    + r"""
    (?P<secret>[A-Za-z0-9._~+/\-]*[A-Za-z0-9_~+/\-]=*)
    """,
    re.IGNORECASE | re.VERBOSE,
)
# scheme://user:password@host. The password runs to the last "@" before the host, so
# one holding "@", "!", "$", ";" or a %-escape ("p%40ss!w0rd", written carelessly
# "p@ss") goes whole; the user may be empty (redis://:secret@host).
_URL_PASSWORD = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#\[\]@]*:"
    + NOT_A_MARKER
    + r"(?P<secret>[^\s/?#]+)@(?=[^\s/?#@]+)"
)
# scheme://TOKEN@host: a token as the whole user part (Sentry DSNs, git remotes).
_URL_TOKEN = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.\-]*://"
    + NOT_A_MARKER
    + r"(?P<secret>(?=[A-Za-z_\-]*\d)(?=[0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{20,})@"
)
_QUOTED_OR_BARE = r"""(?:'[^'\n]*'|"[^"\n]*"|[^\s'"]+)"""
# mysql/mariadb take the password glued to -p ("-pS3cret"; a bare -p prompts for it);
# sshpass takes it after -p.
_PASSWORD_FLAG = re.compile(
    r"(?:(?:mysql\w*|mariadb\w*)\b[^\n]*?[ \t]-p|sshpass\b[^\n]*?[ \t]-p[ \t]*)"
    + NOT_A_MARKER
    + f"(?P<secret>{_QUOTED_OR_BARE})"
)
_PASSWORD_OPTION = re.compile(
    r"(?<![A-Za-z0-9_\-])--(?:password|passwd|pass|pwd|token|secret|api-key|apikey"
    r"|access-token|auth-token|client-secret|private-token)(?:=|[ \t]+)(?!-)"
    + NOT_A_MARKER
    + f"(?P<secret>{_QUOTED_OR_BARE})",
    re.IGNORECASE,
)
_CURL_USER = re.compile(
    r"(?:curl|wget)\b[^\n]*?(?:[ \t]-u[ \t]*|--user[= \t]|--http-user[= \t])"
    # The user may be a marker already (a Twilio SID), whose own colon is not the pair's.
    r"[\"']?(?:\[REDACTED:[a-z0-9\-]+\]|" + NOT_A_MARKER + r"[^\s:\"']+):" + NOT_A_MARKER
    + r"(?P<secret>[^\s\"']+)"
)
# The key is matched without a left boundary so DB_PASSWORD, SLACK_BOT_TOKEN and
# client_secret all hit, but nothing may follow it except quotes or markdown emphasis
# before the separator, so "tokens: 5" and "I forgot my password" do not. A quoted
# value runs to its closing quote (or the end of the line, if cut off); a bare one
# runs to whitespace, minus trailing punctuation that most likely ends the sentence.
# The key-to-value part is atomic: were it allowed to backtrack, a second pass could
# give back the "*" of "*Password:* [REDACTED:password]" and redact it as the value.
def _assignment(keys: str) -> re.Pattern[str]:
    return re.compile(
        r"""
        (?>
            (?:"""
        + keys
        + r""")
            ["'`*_~]*[ \t]*(?::=|=>|={1,3}|:)[ \t]*(?:[*_~]+[ \t]*)?["'`]?
        )
        """
        + NOT_A_MARKER
        + r"""
        (?P<secret>
            (?<=")[^"\n]+
          | (?<=')[^'\n]+
          | (?<=`)[^`\n]+
          | [^\s"'`]*[^\s"'`.,;:)\]}>]
        )
        """,
        re.IGNORECASE | re.VERBOSE,
    )


# After a password's name any value is the password ("password: sunshine").
_PASSWORD_ASSIGNMENT = _assignment(r"passwd|password|passphrase|passcode|pwd")
# After a token's or key's name, only a value shaped like one (_credential_shaped):
# "ANTHROPIC_API_KEY: replies come from memory" is a sentence about the setting.
_KEY_ASSIGNMENT = _assignment(
    r"secret(?:[_-]?key)?|token|api[_-]?key|apikey|access[_-]?key|app[_-]?key|auth[_-]?key"
    r"|signing[_-]?key|encryption[_-]?key"
)
# "my password for the staging box is hunter2!", "the wifi password is CorrectHorse42":
# a password word, up to six words about it, "is"/"was", then the value, if it is
# shaped like a password (_shaped_like_a_password), so "the password is wrong" and
# "the PIN pad is broken" stay.
_PROSE_PASSWORD = re.compile(
    r"\b(?:password|passphrase|passcode|passwd|pin(?:[ \t]+code)?)\b"
    r"(?:[ \t]+(?!is\b|was\b)[^\s.,;:!?\"'`]+){0,6}?"
    r"[ \t]+(?:is|was|will[ \t]+be|should[ \t]+be)[ \t]+(?:now[ \t]+|still[ \t]+|just[ \t]+)?"
    r"[\"'`“]?" + NOT_A_MARKER + r"(?P<secret>[^\s\"'`”]*[^\s\"'`”.,;:)\]}>])",
    re.IGNORECASE,
)
# A token-like value right after a word such as token/secret/key/password, when it is
# random enough to be one: "api key 9fA3kQ0zL1mN8pR2", "the token is Zx81kQmB0pLw6tYv".
_KEYWORD_TOKEN = re.compile(
    r"(?<![a-z])(?:token|secret|(?:api|access|secret|auth|app)?key|password|passwd|passphrase"
    r"|credentials?)"
    r"[\"'`*_~]*(?:[ \t]*(?::=|=>|={1,3}|:)[ \t]*|[ \t]+(?:(?:is|was)[ \t]+)?)[\"'`]?"
    + NOT_A_MARKER
    + r"(?P<secret>[A-Za-z0-9+/=_\-.~]{11,}[A-Za-z0-9+/=_])",
    re.IGNORECASE,
)
# Bits per character above which a value is taken for random; a 12-character value can
# hold at most log2(12) = 3.58, words and dates stay well below 3.
_RANDOM_ENOUGH = 3.0


def shannon_entropy(text: str) -> float:
    length = len(text)
    return -sum(count / length * math.log2(count / length) for count in Counter(text).values())


def _looks_random(value: str) -> bool:
    return (
        len(value) >= 12
        and any(char.isdigit() for char in value)
        and any(char.isalpha() for char in value)
        and shannon_entropy(value) >= _RANDOM_ENOUGH
    )


def _credential_shaped(value: str) -> bool:
    """A digit, twelve characters or more, or a symbol: "abc123", "s3cr3t-value", "a.b.c"."""
    return (
        len(value) >= 12
        or any(char.isdigit() for char in value)
        or any(not char.isalnum() and char not in "-'" for char in value)
    )


def _shaped_like_a_password(value: str) -> bool:
    """A digit, a symbol, or a capital past the first letter: "Tr0ub4dor", "p@ss", "CorrectHorse".

    A plain word after "the password is" is far more often about the password
    ("wrong", "expired", "in-the-vault") than the password itself.
    """
    return (
        any(char.isdigit() for char in value)
        or any(not char.isalnum() and char not in "-'" for char in value)
        or any(char.isupper() for char in value[1:])
    )


def context_rules() -> tuple[Rule, ...]:
    return (
        Rule("auth-token", _AUTHORIZATION, ("bearer", "authorization"), group="secret"),
        Rule("password", _URL_PASSWORD, ("://",), group="secret"),
        Rule("url-token", _URL_TOKEN, ("://",), group="secret"),
        Rule("password", _PASSWORD_FLAG, ("mysql", "mariadb", "sshpass"), group="secret"),
        Rule("password", _PASSWORD_OPTION, ("--",), group="secret"),
        Rule("password", _CURL_USER, ("curl", "wget"), group="secret"),
        Rule("password", _PASSWORD_ASSIGNMENT, ("pass", "pwd"), group="secret"),
        Rule(
            "password",
            _KEY_ASSIGNMENT,
            ("secret", "token", "key"),
            group="secret",
            accept=_credential_shaped,
        ),
        Rule(
            "password",
            _PROSE_PASSWORD,
            ("pass", "pin"),
            group="secret",
            accept=_shaped_like_a_password,
        ),
        Rule(
            "secret",
            _KEYWORD_TOKEN,
            ("token", "secret", "key", "pass", "credential"),
            group="secret",
            accept=_looks_random,
        ),
    )
