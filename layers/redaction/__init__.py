"""Replace secrets in free text with ``[REDACTED:<kind>]`` before anything is kept or shown.

Runs on every write and on every way out (exports, ``people show``, ``skills show``,
logs, replies), so it must be cheap on the common case and must never leak a tail
of a secret it half-matched.

The rules come in three groups, run in this order (``rules.py`` says how one applies):

1. ``vendors``: whole PEM blocks, and the vendor token formats detect-secrets has no
   plugin for (Anthropic, Hugging Face, Shopify, Google, Datadog, Azure connection
   strings and SAS signatures, npm, Vault, ...);
2. ``catalogue``: every plugin of detect-secrets, the catalogue we build on (see the
   README for why that one);
3. ``context``: values known by what surrounds them: ``password=``-style assignments,
   ``Authorization`` headers, credentials inside URLs, command-line passwords, a
   password in a sentence, and a random-looking value after token/secret/key/password.
"""

from __future__ import annotations

from layers.redaction.catalogue import catalogue_rules
from layers.redaction.context import context_rules
from layers.redaction.rules import MARKER_PREFIX, Rule
from layers.redaction.vendors import vendor_rules

__all__ = ["MARKER_PREFIX", "redact", "redact_values"]

_RULES: tuple[Rule, ...] = vendor_rules() + catalogue_rules() + context_rules()
_TRIGGERS = frozenset(trigger for rule in _RULES for trigger in rule.triggers)


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``[REDACTED:<kind>]``.

    Everything that is not a secret is returned unchanged, byte for byte, and
    ``redact(redact(text)) == redact(text)``.
    """
    # casefold, not lower: it maps every character re.IGNORECASE treats as a letter's
    # other case (e.g. the Kelvin sign) onto the ASCII trigger.
    folded = text.casefold()
    present = {trigger for trigger in _TRIGGERS if trigger in folded}
    for rule in _RULES:
        if not rule.triggers or not present.isdisjoint(rule.triggers):
            text = rule.apply(text)
    return text


def redact_values(value: object) -> object:
    """``value`` (parsed JSON) with every string in it redacted.

    Redacting a JSON text instead would see ``\\n`` escapes where the rules expect
    line breaks, and a secret after one could pass.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_values(item) for item in value]
    if isinstance(value, dict):
        return {key: redact_values(item) for key, item in value.items()}
    return value
