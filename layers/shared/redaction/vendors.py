"""Secrets known by their shape that detect-secrets' catalogue has no plugin for.

Each line names the vendor's published token format (prefix and alphabet). They run
before the catalogue, so a token both know is labelled here with the narrower name,
and whole blocks (PEM keys) go before any pattern could match a piece of one.
"""

from __future__ import annotations

import re

from layers.shared.redaction.rules import NOT_A_MARKER, Rule

# Not inside a longer word or token: "xhf_..." or "my-npm_..." are not these tokens.
_ALONE = r"(?<![A-Za-z0-9_\-])"

# (kind, triggers, pattern after the boundary)
_PREFIXED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("anthropic-key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    # OpenAI project and service-account keys lack the T3BlbkFJ marker the catalogue
    # relies on; a digit keeps "sk-learn-pipelines-..." out.
    ("openai-key", ("sk-",), r"sk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}"),
    ("github-token", ("github_pat_",), r"github_pat_[A-Za-z0-9_]{20,}"),
    ("huggingface-token", ("hf_",), r"hf_[A-Za-z0-9]{30,}"),
    ("shopify-token", ("shp",), r"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}"),
    ("google-api-key", ("aiza",), r"AIza[0-9A-Za-z_\-]{35}"),
    ("google-oauth-secret", ("gocspx-",), r"GOCSPX-[A-Za-z0-9_\-]{20,}"),
    ("google-oauth-token", ("ya29.",), r"ya29\.[0-9A-Za-z_\-]{20,}"),
    ("stripe-key", ("_live_", "_test_"), r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}"),
    ("stripe-webhook-secret", ("whsec_",), r"whsec_[A-Za-z0-9+/=]{20,}"),
    ("npm-token", ("npm_",), r"npm_[A-Za-z0-9]{36}"),
    ("pypi-token", ("pypi-",), r"pypi-[A-Za-z0-9_\-]{50,}"),
    ("mailgun-key", ("key-",), r"key-[0-9A-Za-z]{32}(?![A-Za-z0-9])"),
    ("mailgun-key", ("-",), r"[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}(?![A-Za-z0-9])"),
    # Azure AD (Entra) client secrets: three characters, a digit, "Q~", then 31-34.
    ("azure-client-secret", ("q~",), r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    ("digitalocean-token", ("_v1_",), r"do[opr]_v1_[a-f0-9]{64}"),
    ("linear-key", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),
    ("notion-token", ("ntn_", "secret_"), r"(?:ntn|secret)_[A-Za-z0-9]{43,}"),
    ("postman-key", ("pmak-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("vault-token", ("hvs.", "hvb.", "hvr."), r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("terraform-token", (".atlasv1.",), r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}"),
    ("grafana-token", ("glsa_",), r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana-token", ("glc_",), r"glc_[A-Za-z0-9+/]{32,}={0,2}"),
    ("newrelic-key", ("nrak-",), r"NRAK-[A-Z0-9]{27}"),
    ("databricks-token", ("dapi",), r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("age-secret-key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("square-token", ("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,}"),
    ("doppler-token", ("dp.pt.",), r"dp\.pt\.[A-Za-z0-9]{40,}"),
    ("sentry-token", ("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    ("supabase-token", ("sbp_",), r"sbp_[a-f0-9]{40}"),
    ("groq-key", ("gsk_",), r"gsk_[A-Za-z0-9]{48,}"),
    ("replicate-token", ("r8_",), r"r8_[A-Za-z0-9]{37}"),
    ("perplexity-key", ("pplx-",), r"pplx-[A-Za-z0-9]{40,}"),
    ("xai-key", ("xai-",), r"xai-[A-Za-z0-9]{60,}"),
    ("atlassian-token", ("atatt",), r"ATATT3[A-Za-z0-9_\-=]{150,}"),
    ("figma-token", ("figd_",), r"figd_[A-Za-z0-9_\-]{40,}"),
    ("heroku-key", ("hrku-",), r"HRKU-[A-Za-z0-9_\-]{60,}"),
    # Thoth's own MCP tokens (bridge/access/tokens.py): 43 URL-safe characters.
    ("thoth-mcp-token", ("thoth_mcp_",), r"thoth_mcp_[A-Za-z0-9_\-]{40,}"),
)

# Every PEM private key flavour (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK, plain).
# Without an END line (a truncated paste) everything after BEGIN goes: we cannot tell
# where the key body stops, and leaking part of it is worse than losing a sentence.
_PEM_BLOCK = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)", re.DOTALL)

_SLACK_WEBHOOK = re.compile(
    r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]+",
    re.IGNORECASE,
)
_DISCORD_WEBHOOK = re.compile(
    r"(?:https?://)?(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+",
    re.IGNORECASE,
)
# Newer and rarer Slack families (rotating xoxe, browser xoxc/xoxd, app-level xapp)
# besides the catalogue's xoxb/xoxp. Requiring a digit and ten characters keeps
# "xoxo-hugs" style words out.
_SLACK_TOKEN = re.compile(
    _ALONE + r"(?:xox[a-z]|xapp)-(?=[A-Za-z0-9%_\-]*\d)[A-Za-z0-9%_\-]{10,}", re.IGNORECASE
)
# The values in Azure connection strings and SAS URLs (the catalogue knows only an
# 88-character AccountKey).
_AZURE_VALUE = re.compile(
    r"(?:AccountKey|SharedAccessKey|SharedAccessSignature|[?&;]sig)="
    + NOT_A_MARKER
    + r"(?P<secret>[A-Za-z0-9%+/=]{16,})",
    re.IGNORECASE,
)
# Unquoted "aws_secret_access_key = ..." (the catalogue wants quotes around the value).
_AWS_SECRET_ASSIGNED = re.compile(
    r"aws_?secret(?:_?access)?_?key[\"']?[ \t]*(?::=|=>|={1,3}|:)[ \t]*[\"']?"
    + NOT_A_MARKER
    + r"(?P<secret>[A-Za-z0-9/+=]{20,})",
    re.IGNORECASE,
)
# Discord bot tokens: base64 of the bot's id (24 characters for older ids, 26 and more for
# today's 19-digit ones), a 6-character timestamp and an HMAC of 27 characters or, on newer
# tokens, 38. The catalogue's pattern knows only the 24/27 shape and leaves a newer one's
# edges behind.
_DISCORD_BOT_TOKEN = re.compile(
    _ALONE
    + r"[MNO][A-Za-z0-9_\-]{23,31}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![A-Za-z0-9_\-])"
)
# A Twilio auth token is 32 hex characters with no prefix of its own: known by the words
# before it ("auth", "auth token", "authToken") or by following an account SID and a colon
# (the -u of curl, a basic-auth pair).
_TWILIO_AUTH_TOKEN = re.compile(
    r"(?:\bauth(?:[ _\-]?token)?(?:[ \t]+is)?[\"']?[ \t]*[:=]?[ \t]*[\"']?"
    r"|\bAC[0-9a-f]{32}:)"
    + NOT_A_MARKER
    + r"(?P<secret>[0-9a-f]{32})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_DATADOG_KEY = re.compile(
    r"(?:dd|datadog)[_-]?(?:api|app(?:lication)?)[_-]?key[\"']?[ \t]*[:=][ \t]*[\"']?"
    + NOT_A_MARKER
    + r"(?P<secret>[A-Fa-f0-9]{32,40})",
    re.IGNORECASE,
)


def vendor_rules() -> tuple[Rule, ...]:
    blocks = (
        Rule("private-key", _PEM_BLOCK, ("private key",), spans_lines=True),
        Rule("private-key", _PUTTY_KEY, ("putty-user-key-file",), spans_lines=True),
        Rule("slack-webhook", _SLACK_WEBHOOK, ("hooks.slack.com",)),
        Rule("discord-webhook", _DISCORD_WEBHOOK, ("/api/webhooks/",)),
        Rule("slack-token", _SLACK_TOKEN, ("xox", "xapp-")),
        Rule("azure-key", _AZURE_VALUE, ("accountkey", "sharedaccess", "sig="), group="secret"),
        Rule("aws-secret-key", _AWS_SECRET_ASSIGNED, ("aws",), group="secret"),
        Rule("datadog-key", _DATADOG_KEY, ("dd", "datadog"), group="secret"),
        Rule("discord-bot-token", _DISCORD_BOT_TOKEN, (".",)),
        Rule("twilio-auth-token", _TWILIO_AUTH_TOKEN, ("auth", "ac"), group="secret"),
    )
    prefixed = tuple(
        Rule(kind, re.compile(_ALONE + pattern), triggers) for kind, triggers, pattern in _PREFIXED
    )
    return blocks + prefixed
