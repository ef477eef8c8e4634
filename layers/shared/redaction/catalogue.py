"""Secrets known by their shape, from detect-secrets' catalogue of vendor plugins.

Every plugin in detect-secrets' registry that carries regexes (its ``denylist``)
becomes rules here, so a vendor added upstream is redacted after an upgrade with
no change on our side. The plugins were written to find secrets in files, not to
cut them out of text, so three things are decided here:

- where the secret lies in a match: the last group that took part, if it is long
  enough to be a secret (``user:(password)@``, ``key = "(value)"``); otherwise the
  whole match, minus the quotes, spaces and separators some patterns take around
  the token;
- the rest of the token after a pattern that stops at a fixed length (GitHub's 36
  characters, AWS's 16) goes too, so no tail is left behind;
- which plugins are left out, and why (``_LEFT_OUT``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

from layers.shared.redaction.rules import Rule

_LEFT_OUT = {
    # An address is not a credential, and people talk about their servers.
    "Public IP (ipv4)",
    # Its patterns match only the BEGIN line; vendors.PEM_BLOCK takes the whole block.
    "Private Key",
}
# Marker names kept from before the catalogue was used whole; any other plugin's
# marker is its secret type in lower case ("GitLab Token" -> gitlab-token).
_KIND = {
    "JSON Web Token": "jwt",
    "OpenAI Token": "openai-key",
    "Basic Auth Credentials": "password",
    "Azure Storage Account access key": "azure-key",
    "NPM tokens": "npm-token",
}
# A plugin whose patterns find different things: (secret type, pattern index).
_PATTERN_KIND = {("AWS Access Key", 1): "aws-secret-key", ("Slack Token", 1): "slack-webhook"}

# Plugins whose pattern also matches ordinary words, narrowed by what must come first.
# A JWT is not inside a word ("heyJoe.mp3"), and its header is at least as long as the
# shortest real one ('{"alg":"none"}' is 19 characters encoded), so "eyJust.kidding"
# is left alone.
_LEAD = {"JSON Web Token": r"(?<![A-Za-z0-9_\-])(?=eyJ[A-Za-z0-9_=\-]{16,}\.)"}

# What every match of a plugin contains (lower case), so the common text without any
# of it skips the plugin's regexes; a plugin not listed always runs.
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "AWS Access Key": ("a3t", "abia", "acca", "akia", "asia", "aws"),
    "Artifactory Credentials": ("akc", "ap"),
    "Azure Storage Account access key": ("accountkey",),
    "Basic Auth Credentials": ("://",),
    "Cloudant Credentials": ("key", "pw", "pass", "token", "cloudant"),
    "Discord Bot Token": (".",),
    "GitHub Token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLab Token": ("gl", "gr1348941"),
    "IBM Cloud IAM Key": ("key", "pwd", "pass", "token"),
    "IBM COS HMAC Credentials": ("key",),
    "JSON Web Token": ("eyj",),
    "Mailchimp Access Key": ("-us",),
    "NPM tokens": ("_authtoken",),
    "OpenAI Token": ("t3blbkfj",),
    "PyPI Token": ("pypi-",),
    "SendGrid API Key": ("sg.",),
    "Slack Token": ("xox", "hooks.slack.com"),
    "SoftLayer Credentials": ("key", "pwd", "pass", "token", "softlayer"),
    "Square OAuth Secret": ("sq0csp-",),
    "Stripe Access Key": ("_live_",),
    "Telegram Bot Token": (":",),
    "Twilio API Key": ("ac", "sk"),
}

_SHORTEST_SECRET = 8
_AROUND_TOKEN = frozenset(" \t\r\n\"'`=:")
# The rest of a token: its characters, and dots, slashes or plus signs inside it (a
# JWT's signature after the pattern's lazy end), but not a full stop ending a sentence.
_TOKEN_TAIL = re.compile(r"(?:[A-Za-z0-9_\-]|[.+/](?=[A-Za-z0-9_\-]))*=*")


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    text = match.string
    for group in range(match.re.groups, 0, -1):
        start, end = match.span(group)
        if end - start >= _SHORTEST_SECRET:
            break
    else:
        start, end = match.span()
        while start < end and text[start] in _AROUND_TOKEN:
            start += 1
        while end > start and text[end - 1] in _AROUND_TOKEN:
            end -= 1
    if end > start and (
        text[end - 1].isascii() and text[end - 1].isalnum() or text[end - 1] in "_-."
    ):
        tail = _TOKEN_TAIL.match(text, end)
        if tail:
            end = tail.end()
    return start, end


def _kind(secret_type: str) -> str:
    return _KIND.get(secret_type) or re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def catalogue_rules() -> tuple[Rule, ...]:
    """One rule per pattern of every detect-secrets plugin not left out."""
    span: Callable[[re.Match[str]], tuple[int, int]] = _secret_span
    rules: list[Rule] = []
    plugins: dict[str, type] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin in sorted(plugins.items()):
        if secret_type in _LEFT_OUT:
            continue
        for index, pattern in enumerate(getattr(plugin, "denylist", ()) or ()):
            kind = _PATTERN_KIND.get((secret_type, index)) or _kind(secret_type)
            if secret_type in _LEAD:
                pattern = re.compile(_LEAD[secret_type] + pattern.pattern, pattern.flags)
            rules.append(Rule(kind, pattern, _TRIGGERS.get(secret_type, ()), span=span))
    return tuple(rules)
