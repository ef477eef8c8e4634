"""Replace secrets in free text with ``[REDACTED:<kind>]`` before anything is persisted.

Runs on every write and again on every read, so it must be cheap on the common
case (no secret at all) and must never leak a tail of a secret it half-matched.

Where the patterns come from:

- detect-secrets (``detect_secrets.plugins.*.denylist``) supplies the Slack token
  and webhook, AWS access key id and quoted AWS secret, GitHub token, OpenAI key,
  JWT and basic-auth-URL patterns. It is maintained against the vendors' token
  formats, so we reuse its regexes rather than copy them. Several of them match
  only a fixed-length prefix (GitHub ``{36}``, AWS ``{16}``) or stop early (the JWT
  pattern ends lazily, before the signature), so each gets a tail that swallows
  the rest of the token.
- Hand-written, because detect-secrets has nothing that fits: whole PEM blocks
  (its ``PrivateKeyDetector`` matches only the ``BEGIN`` line, which would leave
  the key body in place), Anthropic keys (no plugin), the token families its
  Slack/GitHub/OpenAI patterns miss (``xoxe-``/``xoxc-``/``xapp-``,
  ``github_pat_``, OpenAI keys without the ``T3BlbkFJ`` marker), Slack workflow
  webhooks, unquoted ``aws_secret_access_key = ...``, ``Authorization`` headers and
  ``password=...``-style assignments (its ``KeywordDetector`` is a line-oriented
  scanner with no single regex we could reuse for replacing only the value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.slack import SlackDetector

MARKER_PREFIX = "[REDACTED:"

# The rest of a token after a library pattern stopped matching at a fixed length.
_TOKEN_TAIL = r"[A-Za-z0-9_\-]*"
# A value that already is a marker is left alone; this is what makes redact idempotent.
_NOT_A_MARKER = r"(?!\[REDACTED:)"


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Lower-case substrings of which every match contains at least one; a rule whose
    # triggers are all absent is skipped without running its regex (the fast path).
    triggers: tuple[str, ...]
    # The group holding the secret; 0 replaces the whole match, a named group keeps
    # the surrounding key name, quotes and URL parts.
    group: int | str = 0


def _extended(pattern: re.Pattern[str], tail: str = "", lead: str = "") -> re.Pattern[str]:
    """A detect-secrets pattern wrapped so the match also covers what surrounds the token."""
    return re.compile(f"{lead}(?:{pattern.pattern}){tail}", pattern.flags)


_SLACK_TOKEN, _SLACK_WEBHOOK = SlackDetector.denylist
_AWS_KEY_ID, _AWS_QUOTED_SECRET = AWSKeyDetector.denylist
(_GITHUB_TOKEN,) = GitHubTokenDetector.denylist
(_OPENAI_KEY,) = OpenAIDetector.denylist
(_JWT,) = JwtTokenDetector.denylist
(_BASIC_AUTH_URL,) = BasicAuthDetector.denylist

# Every PEM private key flavour (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK, plain).
# Without an END line (a truncated paste) everything after BEGIN goes: we cannot tell
# where the key body stops, and leaking part of it is worse than losing a sentence.
_PEM_BLOCK = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)", re.DOTALL)

_SLACK_WEBHOOK_ANY = re.compile(
    r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]+",
    re.IGNORECASE,
)
# Newer and rarer Slack families (rotating xoxe, browser xoxc/xoxd, app-level xapp).
# Requiring a digit and ten characters keeps "xoxo-hugs" style words out.
_SLACK_TOKEN_ANY = re.compile(
    r"(?<![A-Za-z0-9])(?:xox[a-z]|xapp)-(?=[A-Za-z0-9%_\-]*\d)[A-Za-z0-9%_\-]{10,}",
    re.IGNORECASE,
)
_ANTHROPIC_KEY = re.compile(r"(?<![A-Za-z0-9_\-])sk-ant-[A-Za-z0-9_\-]{20,}")
# OpenAI keys that lack the T3BlbkFJ marker detect-secrets relies on (some project and
# service-account keys). Runs after the Anthropic rule, which shares the ``sk-`` prefix.
_OPENAI_KEY_ANY = re.compile(r"(?<![A-Za-z0-9_\-])sk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}")
# Not inside a word ("heyJoe.mp3"), and a header at least as long as the shortest real
# one ('{"alg":"none"}' is 19 characters encoded), so "eyJust.kidding" is left alone.
_JWT_START = r"(?<![A-Za-z0-9_\-])(?=eyJ[A-Za-z0-9_=\-]{16,}\.)"
_GITHUB_PAT = re.compile(r"github_pat_[A-Za-z0-9_]{20,}")
_AWS_SECRET_ASSIGNED = re.compile(
    r"aws_?secret(?:_?access)?_?key[\"']?[ \t]*(?::=|=>|={1,3}|:)[ \t]*[\"']?"
    + _NOT_A_MARKER
    + r"(?P<secret>[A-Za-z0-9/+=]{20,})",
    re.IGNORECASE,
)
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
    + _NOT_A_MARKER
    + r"""
    (?P<secret>[A-Za-z0-9._~+/\-]*[A-Za-z0-9_~+/\-]=*)
    """,
    re.IGNORECASE | re.VERBOSE,
)
# The key is matched without a left boundary so DB_PASSWORD, SLACK_BOT_TOKEN and
# client_secret all hit, but nothing may follow it except quotes or markdown emphasis
# before the separator, so "tokens: 5" and "I forgot my password" do not. A quoted
# value runs to its closing quote (or the end of the line, if cut off); a bare one
# runs to whitespace, minus trailing punctuation that most likely ends the sentence.
# The key-to-value part is atomic: were it allowed to backtrack, a second pass could
# give back the "*" of "*Password:* [REDACTED:password]" and redact it as the value.
_ASSIGNMENT = re.compile(
    r"""
    (?>
        (?:passwd|password|passphrase|pwd|secret(?:[_-]?key)?|token|api[_-]?key|apikey)
        ["'`*_~]*[ \t]*(?::=|=>|={1,3}|:)[ \t]*(?:[*_~]+[ \t]*)?["'`]?
    )
    """
    + _NOT_A_MARKER
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

# Order matters: whole blocks and specific token formats run before the generic
# key=value rules, so "token=xoxb-..." is labelled slack-token, and the generic rules
# then skip the marker.
_RULES: tuple[_Rule, ...] = (
    _Rule("private-key", _PEM_BLOCK, ("private key",)),
    _Rule("private-key", _PUTTY_KEY, ("putty-user-key-file",)),
    _Rule("slack-webhook", _SLACK_WEBHOOK, ("hooks.slack.com",)),
    _Rule("slack-webhook", _SLACK_WEBHOOK_ANY, ("hooks.slack.com",)),
    _Rule("slack-token", _extended(_SLACK_TOKEN, _TOKEN_TAIL), ("xox",)),
    _Rule("slack-token", _SLACK_TOKEN_ANY, ("xox", "xapp-")),
    _Rule("anthropic-key", _ANTHROPIC_KEY, ("sk-ant-",)),
    _Rule("openai-key", _extended(_OPENAI_KEY, _TOKEN_TAIL), ("sk-",)),
    _Rule("openai-key", _OPENAI_KEY_ANY, ("sk-",)),
    _Rule(
        "github-token",
        _extended(_GITHUB_TOKEN, _TOKEN_TAIL),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Rule("github-token", _GITHUB_PAT, ("github_pat_",)),
    _Rule(
        "aws-access-key",
        _extended(_AWS_KEY_ID, "[A-Z0-9]*"),
        ("a3t", "abia", "acca", "akia", "asia"),
    ),
    _Rule("aws-secret-key", _AWS_QUOTED_SECRET, ("aws",), group=1),
    _Rule("aws-secret-key", _AWS_SECRET_ASSIGNED, ("aws",), group="secret"),
    _Rule("jwt", _extended(_JWT, r"[A-Za-z0-9_\-+/=]*", _JWT_START), ("eyj",)),
    _Rule("password", _BASIC_AUTH_URL, ("://",), group=1),
    _Rule("auth-token", _AUTHORIZATION, ("bearer", "authorization"), group="secret"),
    _Rule(
        "password",
        _ASSIGNMENT,
        ("pass", "pwd", "secret", "token", "api_key", "api-key", "apikey"),
        group="secret",
    ),
)


def _apply(rule: _Rule, text: str) -> str:
    marker = f"{MARKER_PREFIX}{rule.kind}]"
    pieces: list[str] = []
    done = 0
    for match in rule.pattern.finditer(text):
        start, end = match.span(rule.group)
        pieces.append(text[done:start])
        pieces.append(marker)
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``[REDACTED:<kind>]``.

    Kinds: ``slack-token``, ``slack-webhook``, ``anthropic-key``, ``openai-key``,
    ``aws-access-key``, ``aws-secret-key``, ``github-token``, ``jwt``,
    ``private-key`` (the whole PEM block), ``auth-token`` (``Authorization``
    headers) and ``password`` (the value of ``password=``/``token:``/``api_key=``...
    assignments and of ``user:password@`` in URLs; the key name is kept).

    Everything that is not a secret is returned unchanged, byte for byte, and
    ``redact(redact(text)) == redact(text)``.
    """
    # casefold, not lower: it maps every character re.IGNORECASE treats as a letter's
    # other case (e.g. the Kelvin sign) onto the ASCII trigger.
    folded = text.casefold()
    for rule in _RULES:
        for trigger in rule.triggers:
            if trigger in folded:
                text = _apply(rule, text)
                break
    return text
