"""Tokens sealed at rest (Slack bot tokens, people's connections to remote tools):
Fernet (AES-128-CBC with an HMAC), from ``cryptography``.

Why Fernet: authenticated encryption with a key format, a timestamp and key rotation
(``MultiFernet``) already settled by a library every Python deployment already trusts;
nothing here chooses a cipher mode or a nonce.

``SLACK_TOKEN_KEYS`` holds one key or several, commas between them: the first seals, each
opens. Rotating is adding a new key first, `thoth installations reseal` (every token
sealed again with it, the installs' and the connections'), then dropping the old one:
nothing sealed is lost on the way.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from layers.shared.errors import ConfigurationError


class TokenNotOpened(Exception):
    """No key of SLACK_TOKEN_KEYS opens a sealed token (its key was dropped too soon)."""


class TokenCipher:
    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ConfigurationError("SLACK_TOKEN_KEYS is empty: `thoth installations"
                                     " new-key` prints a key to put there")
        try:
            self._fernet = MultiFernet([Fernet(key.encode()) for key in keys])
        except ValueError as error:
            raise ConfigurationError(
                "SLACK_TOKEN_KEYS holds a key that is not a Fernet key (32 bytes in URL-safe"
                " base64): `thoth installations new-key` prints one") from error

    @classmethod
    def from_setting(cls, value: str) -> TokenCipher:
        return cls([key.strip() for key in value.split(",") if key.strip()])

    @staticmethod
    def new_key() -> str:
        return Fernet.generate_key().decode()

    def seal(self, token: str) -> str:
        return self._fernet.encrypt(token.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken as error:
            raise TokenNotOpened(
                "no key of SLACK_TOKEN_KEYS opens a stored bot token: put back the key it"
                " was sealed with (first drop a key only after `thoth installations"
                " reseal`)") from error

    def reseal(self, sealed: str) -> str:
        """The same token sealed with the first key."""
        try:
            return self._fernet.rotate(sealed.encode()).decode()
        except InvalidToken as error:
            raise TokenNotOpened("no key of SLACK_TOKEN_KEYS opens a stored bot token"
                                 ) from error
