"""redact(): every kind of secret is replaced, everything else survives byte for byte.

The fake secrets are assembled at run time from pieces so this file does not itself
trip secret scanners; none of them is a live credential.
"""

from __future__ import annotations

import base64
import json

import pytest

from layers.shared.redaction import redact


def _b64url_json(value: dict[str, object]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


ALNUM20 = "A1b2C3d4E5f6G7h8I9j0"
JWT = (
    _b64url_json({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64url_json({"sub": "1234567890", "name": "Ann", "iat": 1516239022})
    + "."
    + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
PEM_BODY = "MIIEowIBAAKCAQEA7bq" + "Zk3Fq0+W9xk2d\nq8Lr0Ujb5mX0v3Yc" + "Q1rT2gH8kP4wZ9sN/aB6"


def _pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n{PEM_BODY}\n-----END {label}-----"


# (kind, secret): each secret stands alone, so the whole string becomes the marker.
WHOLE_TOKENS = [
    ("slack-token", "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack-token", "xoxp-" + "1234567890-1234567890-1234567890123-" + "0123456789abcdef" * 2),
    ("slack-token", "xoxa-" + "2-1234567890-" + "0123456789abcdef"),
    ("slack-token", "xoxr-" + "1234567890-" + "AbCdEfGhIjKlMnOp"),
    ("slack-token", "xoxs-" + "1234567890-1234567890-" + "0123456789abcdef"),
    ("slack-token", "xoxe-" + "1-" + "My0xLTEyMzQ1Njc4OTAtMTIzNDU2Nzg5MDEyMw"),
    ("slack-token", "xapp-" + "1-A0123ABCDEF-1234567890123-" + "0123456789abcdef" * 4),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/"
        + "T01234ABCDE/B01234ABCDE/"
        + "AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    (
        "slack-webhook",
        "https://hooks.slack.com/triggers/" + "T01234ABCDE/1234567890123/" + "0123456789abcdef",
    ),
    ("anthropic-key", "sk-ant-" + "api03-" + ALNUM20 * 4 + "-AbCdEfAA"),
    ("anthropic-key", "sk-ant-" + "admin01-" + ALNUM20 * 4),
    ("openai-key", "sk-" + ALNUM20 + "T3Blbk" + "FJ" + ALNUM20),
    ("openai-key", "sk-proj-" + ALNUM20 * 3 + "T3Blbk" + "FJ" + ALNUM20 * 2 + "_-xY"),
    ("openai-key", "sk-proj-" + ALNUM20 * 5),
    ("openai-key", "sk-" + ALNUM20 * 2 + "AbCdEfGh"),
    ("aws-access-key", "AKIA" + "IOSFODNN7" + "EXAMPLE"),
    ("aws-access-key", "ASIA" + "Z3QW8PLKM" + "2RT5XYV"),
    ("github-token", "ghp_" + ALNUM20 + "K1l2M3n4O5p6Q7r8"),
    ("github-token", "gho_" + ALNUM20 + "K1l2M3n4O5p6Q7r8"),
    ("github-token", "ghu_" + ALNUM20 + "K1l2M3n4O5p6Q7r8"),
    ("github-token", "ghs_" + ALNUM20 + "K1l2M3n4O5p6Q7r8"),
    ("github-token", "ghr_" + ALNUM20 + "K1l2M3n4O5p6Q7r8"),
    # Longer than the 36 characters detect-secrets matches: the tail must go too.
    ("github-token", "ghp_" + ALNUM20 + "K1l2M3n4O5p6Q7r8" + "TAILtail99"),
    ("github-token", "github_pat_" + "11ABCDEFG0123456789abc" + "_" + ALNUM20 * 3),
    ("jwt", JWT),
    ("private-key", _pem("RSA PRIVATE KEY")),
    ("private-key", _pem("EC PRIVATE KEY")),
    ("private-key", _pem("OPENSSH PRIVATE KEY")),
    ("private-key", _pem("PRIVATE KEY")),
    ("private-key", _pem("ENCRYPTED PRIVATE KEY")),
]


@pytest.mark.parametrize(("kind", "secret"), WHOLE_TOKENS)
def test_token_is_replaced_and_surroundings_kept(kind: str, secret: str) -> None:
    before, after = "Here you go: ", " — rotate it after the demo, thanks!\nnext line"
    out = redact(before + secret + after)
    assert out == f"{before}[REDACTED:{kind}]{after}"


@pytest.mark.parametrize(("kind", "secret"), WHOLE_TOKENS)
def test_token_alone_and_in_punctuation(kind: str, secret: str) -> None:
    assert redact(secret) == f"[REDACTED:{kind}]"
    assert redact(f"({secret})") == f"([REDACTED:{kind}])"
    assert redact(f"`{secret}`") == f"`[REDACTED:{kind}]`"


# (text with the secret, the secret, expected output): only the value goes.
VALUE_ONLY = [
    ("password=hunter2!", "hunter2!", "password=[REDACTED:password]"),
    ("PASSWORD: hunter2x", "hunter2x", "PASSWORD: [REDACTED:password]"),
    ("passwd = 'p4ss w0rd'", "p4ss w0rd", "passwd = '[REDACTED:password]'"),
    ("pwd=Tr0ub4dor&3", "Tr0ub4dor&3", "pwd=[REDACTED:password]"),
    ('secret: "s3cr3t-value"', "s3cr3t-value", 'secret: "[REDACTED:password]"'),
    ("token=abc123def456", "abc123def456", "token=[REDACTED:password]"),
    ("api_key: ak_live_99887766", "ak_live_99887766", "api_key: [REDACTED:password]"),
    ("apikey=QWERTY12345", "QWERTY12345", "apikey=[REDACTED:password]"),
    ('client_secret="cs-0a1b2c3d4e"', "cs-0a1b2c3d4e", 'client_secret="[REDACTED:password]"'),
    ("DB_PASSWORD=pg-Pa55word", "pg-Pa55word", "DB_PASSWORD=[REDACTED:password]"),
    ("X-Api-Key: abcdef123456", "abcdef123456", "X-Api-Key: [REDACTED:password]"),
    (
        '{"user": "ann", "password": "p@ss w0rd"}',
        "p@ss w0rd",
        '{"user": "ann", "password": "[REDACTED:password]"}',
    ),
    ("*Password:* hunter2z", "hunter2z", "*Password:* [REDACTED:password]"),
    ("password: `hunter2y`", "hunter2y", "password: `[REDACTED:password]`"),
    # A trailing full stop most likely ends the sentence, so it stays.
    (
        "Set password=hunter2w. Then log in.",
        "hunter2w",
        "Set password=[REDACTED:password]. Then log in.",
    ),
    ('password="cut off at the end', "cut off at the end", 'password="[REDACTED:password]'),
    (
        "aws_secret_access_key = " + AWS_SECRET,
        AWS_SECRET,
        "aws_secret_access_key = [REDACTED:aws-secret-key]",
    ),
    (
        "AWS_SECRET_ACCESS_KEY=" + AWS_SECRET,
        AWS_SECRET,
        "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]",
    ),
    ('aws_key = "' + AWS_SECRET + '"', AWS_SECRET, 'aws_key = "[REDACTED:aws-secret-key]"'),
    (
        "Authorization: Bearer " + "opaque-Token_0123456789",
        "opaque-Token_0123456789",
        "Authorization: Bearer [REDACTED:auth-token]",
    ),
    (
        'curl -H "Authorization: Basic ' + "dXNlcjpwYXNzd29yZA==" + '" https://api.example.com',
        "dXNlcjpwYXNzd29yZA==",
        'curl -H "Authorization: Basic [REDACTED:auth-token]" https://api.example.com',
    ),
    (
        "use Bearer " + "a1B2c3D4e5F6g7H8i9J0" + " for now",
        "a1B2c3D4e5F6g7H8i9J0",
        "use Bearer [REDACTED:auth-token] for now",
    ),
    (
        "postgres://alice:" + "s3cr3tPa55" + "@db.example.com:5432/app",
        "s3cr3tPa55",
        "postgres://alice:[REDACTED:password]@db.example.com:5432/app",
    ),
]


@pytest.mark.parametrize(("text", "secret", "expected"), VALUE_ONLY)
def test_only_the_value_is_replaced(text: str, secret: str, expected: str) -> None:
    out = redact(text)
    assert secret not in out
    assert out == expected


def test_key_name_beats_generic_rule_for_known_token_formats() -> None:
    token = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
    assert redact(f"SLACK_BOT_TOKEN={token}") == "SLACK_BOT_TOKEN=[REDACTED:slack-token]"
    assert redact(f"Authorization: Bearer {JWT}") == "Authorization: Bearer [REDACTED:jwt]"


def test_whole_pem_block_goes_including_body_lines() -> None:
    text = f"key below\n{_pem('RSA PRIVATE KEY')}\nand that's it"
    out = redact(text)
    assert out == "key below\n[REDACTED:private-key]\nand that's it"
    for line in PEM_BODY.splitlines():
        assert line not in out


def test_pem_block_inside_json_with_escaped_newlines() -> None:
    pem = _pem("PRIVATE KEY").replace("\n", "\\n")
    text = '{"private_key": "' + pem + '\\n", "client_email": "bot@example.iam"}'
    out = redact(text)
    assert out == '{"private_key": "[REDACTED:private-key]\\n", "client_email": "bot@example.iam"}'


def test_truncated_pem_block_is_redacted_to_the_end() -> None:
    text = "oops:\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "\n"
    out = redact(text)
    assert out == "oops:\n[REDACTED:private-key]"


def test_multiple_secrets_in_one_text() -> None:
    slack = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
    github = "ghp_" + ALNUM20 + "K1l2M3n4O5p6Q7r8"
    aws = "AKIA" + "IOSFODNN7" + "EXAMPLE"
    anthropic = "sk-ant-" + "api03-" + ALNUM20 * 4
    text = (
        f"bot={slack}, gh {github}\n"
        f"aws id {aws} and aws_secret_access_key={AWS_SECRET}\n"
        f"claude {anthropic}; jwt {JWT}\n"
        f"db password: hunter2 (don't share)\n{_pem('EC PRIVATE KEY')}\nbye"
    )
    out = redact(text)
    for secret in (slack, github, aws, AWS_SECRET, anthropic, JWT, "hunter2", PEM_BODY):
        assert secret not in out
    assert out == (
        "bot=[REDACTED:slack-token], gh [REDACTED:github-token]\n"
        "aws id [REDACTED:aws-access-key] and aws_secret_access_key=[REDACTED:aws-secret-key]\n"
        "claude [REDACTED:anthropic-key]; jwt [REDACTED:jwt]\n"
        "db password: [REDACTED:password] (don't share)\n[REDACTED:private-key]\nbye"
    )


ALL_POSITIVES = [secret for _, secret in WHOLE_TOKENS] + [text for text, _, _ in VALUE_ONLY]


@pytest.mark.parametrize("text", ALL_POSITIVES)
def test_redact_is_idempotent(text: str) -> None:
    once = redact(f"before {text} after")
    assert redact(once) == once


NEGATIVES = [
    "Hey team, the quarterly review moved to Thursday at 3pm. Bring the roadmap notes!",
    "I forgot my password yesterday and had to reset it.",
    "The password policy says twelve characters; the secret to good tests is patience.",
    "Token budgets are tight: max_tokens 4096, tokens: 5 left. secretary: Jane",
    "fixed in 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 (see also a94a8fe5)",
    "request id 123e4567-e89b-12d3-a456-426614174000 and 123E4567-E89B-12D3-A456-426614174000",
    "on 2024-04-05, at 2024-04-05T10:00:00Z or 2024-04-05T10:00:00.123+02:00",
    "ask <@U012ABCDEF> in <#C0123|general>, thread ts 1712345678.123456, team T0123ABCD",
    "docs at https://example.com/path?query=1&page=2#frag and http://localhost:8080/",
    "email ann@example.com, ssh git@github.com:org/repo.git",
    "the bearer of bad news; bearer instruments were common",
    "xoxo, see you soon! heyJoe.mp3 and eyJust.kidding",
    "task-management-service-dashboard and sk-learn pipelines",
    "password:\n  rotated: monthly",
    'password = ""',
    "ACME1234 AKIA-ish ABCDEFGHIJKLMNOPQRSTUVWXYZ is the alphabet",
    "[REDACTED:slack-token] was already handled; password=[REDACTED:password]",
    "",
    "émoji ✓ and ünïcödé text — stays exactly as is 🚀",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_a_twilio_pair_in_curl_loses_both_halves_and_keeps_its_shape() -> None:
    sid, token = "AC" + "0123456789abcdef" * 2, "fedcba9876543210" * 2
    said = redact(f"curl -u {sid}:{token} https://api.twilio.com")
    assert said == ("curl -u [REDACTED:twilio-api-key]:[REDACTED:twilio-auth-token]"
                    " https://api.twilio.com")
    # A commit hash is not a token because "auth" stands before it.
    assert redact("the auth fix is 8f14e45fceea167a5a36dedd4bea2543aa11bb22") == (
        "the auth fix is 8f14e45fceea167a5a36dedd4bea2543aa11bb22")
