"""Realistic secrets of many kinds, each in the sentence a person would write it in,
and ordinary text that must pass redaction unchanged.

The values are assembled from pieces at run time so this file does not itself trip
secret scanners; none of them is a live credential. Each has the vendor's published
shape (prefix, alphabet, length).
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

_HEX40 = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"
# Every secret's random part is drawn here, in order, so no two secrets share a
# piece (a leak is then told apart by kind) and the file holds no literal secret.
_RANDOM = random.Random(13)


def _draw(alphabet: str, length: int) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(length))


def _alnum(length: int) -> str:
    return _draw(string.ascii_letters + string.digits, length)


def _lower(length: int) -> str:
    return _draw(string.ascii_lowercase + string.digits, length)


def _hex(length: int) -> str:
    return _draw("0123456789abcdef", length)


def _b64(length: int) -> str:
    return _draw(string.ascii_letters + string.digits + "+/", length)


def _b64url_json(value: dict[str, object]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


_JWT = (
    _b64url_json({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64url_json({"sub": "U012ABCDEF", "iat": 1716239022})
    + "."
    + _alnum(43)
)


@dataclass(frozen=True)
class Seeded:
    kind: str
    text: str
    secret: str


def _seed(kind: str, template: str, secret: str) -> Seeded:
    return Seeded(kind, template.format(secret), secret)


SECRETS: tuple[Seeded, ...] = (
    _seed(
        "slack bot token",
        "the bot token is {} for now",
        "xoxb-" + "2048123456789-4096123456789-" + _alnum(24),
    ),
    _seed(
        "slack user token",
        "use {} to read history",
        "xoxp-" + "2048123456789-2048123456790-4096123456789-" + _hex(32),
    ),
    _seed(
        "slack app token",
        "socket mode needs {}",
        "xapp-" + "1-A0123ABCDEF-4096123456789-" + _hex(64),
    ),
    _seed(
        "slack webhook",
        "post alerts to {} please",
        "https://hooks.slack.com/services/" + "T01234ABCDE/B09876ZYXWV/" + _alnum(24),
    ),
    _seed(
        "anthropic key",
        "ANTHROPIC_API_KEY in prod: {}",
        "sk-ant-" + "api03-" + _alnum(80) + "-Qx7AA",
    ),
    _seed(
        "openai project key",
        "try {} for the eval",
        "sk-proj-" + _alnum(60) + "T3Blbk" + "FJ" + _alnum(40),
    ),
    _seed(
        "aws access key id",
        "the IAM user's key id {} (us-east-1)",
        "AKIA" + "4HX7Q2" + "LMZP9R3TWB",
    ),
    _seed(
        "aws secret key",
        "aws_secret_access_key = {}",
        _alnum(40),
    ),
    _seed("github classic token", "clone with {} until Friday", "ghp_" + _alnum(36)),
    _seed(
        "github fine-grained token",
        "the deploy PAT: {}",
        "github_pat_" + "11ABCDEFG0" + _alnum(12) + "_" + _alnum(60),
    ),
    _seed("gitlab token", "GitLab CI token {} rotates monthly", "glpat-" + _alnum(20)),
    _seed("jwt", "the session cookie was {}", _JWT),
    _seed(
        "rsa private key",
        "here is the deploy key:\n{}\nthanks",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
        + _b64(48)
        + "\n"
        + _b64(64)
        + "\n-----END RSA PRIVATE KEY-----",
    ),
    _seed(
        "openssh private key",
        "my laptop key\n{}",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE"
        + _b64(45)
        + "\n"
        + _b64(64)
        + "\n-----END OPENSSH PRIVATE KEY-----",
    ),
    _seed(
        "azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=thothprod;AccountKey={};EndpointSuffix=core.windows.net",
        _b64(86) + "==",
    ),
    _seed(
        "azure sas token",
        "blob URL https://thothprod.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl"
        "&se=2026-12-01T00:00:00Z&sig={}",
        _alnum(30) + "%2B" + _alnum(4) + "%3D",
    ),
    _seed(
        "azure client secret",
        "the app registration secret is {}",
        "Xq8" + "7Q~" + _alnum(31),
    ),
    _seed("twilio api key", "Twilio key {} for SMS", "SK" + _hex(32)),
    _seed("twilio auth token", "TWILIO_AUTH_TOKEN={}", _hex(32)),
    _seed("twilio auth token after auth", "call the Twilio API with auth {} please", _hex(32)),
    _seed("twilio auth token named", "Twilio authToken: '{}'", _hex(32)),
    _seed(
        "sendgrid key",
        "mail through {}",
        "SG." + _alnum(22) + "." + _alnum(43),
    ),
    _seed("npm token", "publish with {}", "npm_" + _alnum(36)),
    _seed(
        "npmrc auth",
        "my .npmrc says //registry.npmjs.org/:_authToken={}",
        "npm_" + _alnum(36),
    ),
    _seed(
        "pypi token",
        "twine password {}",
        "pypi-" + "AgEIcHlwaS5vcmc" + _alnum(63) + "q9Xv",
    ),
    _seed(
        "hugging face token",
        "HF token for the model pull: {}",
        "hf_" + _alnum(34),
    ),
    _seed("shopify token", "the store's admin token {}", "shpat_" + _hex(32)),
    _seed(
        "discord bot token",
        "bot runs with {}",
        "MTA5ODc2" + "NTQzMjEwOTg3NjU0Mw" + ".G" + _alnum(5) + "." + _alnum(27),
    ),
    _seed(
        "discord bot token, newer id and hmac",
        "the bot token is {} for prod",
        "MTE4NjU0MzIxMDk4NzY1NDMyMQ" + ".G" + _alnum(5) + "." + _alnum(38),
    ),
    _seed(
        "discord webhook",
        "announce via {}",
        "https://discord.com/api/webhooks/" + "1098765432109876543/" + _alnum(36),
    ),
    _seed("stripe live key", "charge with {}", "sk_" + "live_" + "51H" + _alnum(24)),
    _seed("stripe restricted key", "reporting uses {}", "rk_" + "live_" + "51H" + _alnum(24)),
    _seed("stripe webhook secret", "endpoint secret {}", "whsec_" + _alnum(32)),
    _seed("google api key", "maps key {}", "AIza" + "SyD" + _alnum(32)),
    _seed(
        "google oauth secret",
        "client secret GOCSPX for the consent screen: {}",
        "GOCSPX-" + _alnum(28),
    ),
    _seed("datadog api key", "DD_API_KEY={}", _hex(32)),
    _seed("mailgun key", "mailgun {} for the newsletter", "key-" + _lower(32)),
    _seed("mailchimp key", "audience sync key {}", _hex(32) + "-us21"),
    _seed(
        "telegram bot token",
        "BotFather gave me {}",
        "5512345678:" + "AAH" + _alnum(32),
    ),
    _seed("square token", "square prod {}", "sq0atp-" + _alnum(22)),
    _seed("vault token", "VAULT_TOKEN is {}", "hvs." + "CAESI" + _alnum(28)),
    _seed("databricks token", "workspace token {}", "dapi" + _hex(32)),
    _seed("digitalocean token", "doctl auth with {}", "dop_v1_" + _hex(64)),
    _seed(
        "postgres url with sub-delimiters",
        "DATABASE_URL=postgres://thoth:{}@db.internal:5432/thoth",
        "p%40ss!w0rd;x",
    ),
    _seed("redis url without user", "cache at redis://:{}@cache.internal:6379/0", "r3d1sS3cret"),
    _seed("amqp url", "broker amqp://worker:{}@mq.internal/vhost", "Rabb1t&Hole"),
    _seed("mongodb url", "mongodb+srv://admin:{}@cluster0.example.net/app", "M0ngo$Pass"),
    _seed("mysql command line", "run mysql -u root -p{} -h db.internal thoth", "S3cretRoot"),
    _seed("pgpassword", "PGPASSWORD={} psql -h db.internal -U thoth", "pg-Pa55word"),
    _seed("password option", "deploy --password {} --host prod", "Tr0ub4dor3x"),
    _seed("curl user", "curl -u admin:{} https://ci.internal/api", "J3nkins!"),
    _seed("password in prose", "my password for the staging box is {}!", "hunter2staging"),
    _seed("wifi password in prose", "the wifi password is {}", "CorrectHorse42"),
    _seed(
        "random token after a keyword",
        "here is the api key {} for the vendor",
        "9fA3kQ0zL1mN8pR2xY",
    ),
    _seed("bearer header", "Authorization: Bearer {}", "opaque-" + _alnum(20)),
    _seed("sentry dsn", "SENTRY_DSN https://{}@o450000.ingest.sentry.io/5", _hex(32)),
    _seed("age key", "age identity {}", "AGE-SECRET-KEY-1" + "QYZ" * 19 + "Q"),
)

# Text that looks a little like secrets but is not one: nothing may be redacted.
ORDINARY: tuple[str, ...] = (
    "Hey team, the quarterly review moved to Thursday at 3pm. Bring the roadmap notes!",
    "I forgot my password yesterday and had to reset it; the new password is required to be long.",
    "The password policy says twelve characters; the secret to good tests is patience.",
    "the password is wrong, and the password was expired, so the password is in the vault now",
    f"fixed in {_HEX40} (see also a94a8fe5), reverted by commit 3f2a9c1e8b7d6a5f4e3d",
    "the key commit is 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 on main",
    "request id 123e4567-e89b-12d3-a456-426614174000 and 123E4567-E89B-12D3-A456-426614174000",
    "on 2024-04-05, at 2024-04-05T10:00:00Z or 2024-04-05T10:00:00.123+02:00, epoch 1712345678",
    "ask <@U012ABCDEF> in <#C0123ABCD|general>, thread ts 1712345678.123456,"
    " team T0123ABCD, bot B0123ABCD",
    "files F0123ABCDEF and app A0123ABCDEF, enterprise E0123ABCD, message client_msg_id 9c1e8b7d",
    "docs at https://example.com/path?query=1&page=2#frag and http://localhost:8080/health",
    "email ann@example.com, ssh git@github.com:org/repo.git, https://git@github.com/org/repo",
    "Token budgets are tight: max_tokens 4096, tokens: 5 left. secretary: Jane; keyboard: US",
    "the primary key is the id column; a key step is reading the logs",
    "run mysql -u root -p -h db.internal to be prompted; ssh -p 2222 host; docker run -p 8080:80",
    "pip install --upgrade pip and git push -u origin main",
    "sk-learn pipelines and task-management-service-dashboard, xoxo see you soon",
    "version 1.2.3-rc.4, sha256:9f86d081884c7d65, build #4512, port 5432",
    "émoji ✓ and ünïcödé text — stays exactly as is 🚀",
    "no ANTHROPIC_API_KEY: replies come from memory alone; SLACK_BOT_TOKEN: not set",
    "The PIN pad is broken; use the password manager to share the password with Ann.",
)
