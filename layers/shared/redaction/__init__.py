"""Replace secrets in free text with ``[REDACTED:<kind>]`` before anything is kept or shown.

Runs on every write and on every way out (exports, ``people show``, ``skills show``,
logs, replies), so it must be cheap on the common case and must never leak a tail
of a secret it half-matched.

The rules come in three groups, run in this order (``rules.py`` says how one applies):

1. ``vendors``: whole PEM blocks, and the vendor token formats detect-secrets has no
   plugin for (Anthropic, Hugging Face, Shopify, Google, Datadog, Azure connection
   strings and SAS signatures, npm, Vault, ...);
2. ``catalogue``: every plugin of detect-secrets, the catalogue we build on (see
   docs/storage.md, "Secrets", for why that one);
3. ``context``: values known by what surrounds them: ``password=``-style assignments,
   ``Authorization`` headers, credentials inside URLs, command-line passwords, a
   password in a sentence, and a random-looking value after token/secret/key/password.
"""

from __future__ import annotations

from layers.shared.redaction.catalogue import catalogue_rules
from layers.shared.redaction.context import context_rules
from layers.shared.redaction.rules import MARKER_PREFIX, Rule
from layers.shared.redaction.vendors import vendor_rules

__all__ = ["MARKER_PREFIX", "redact", "redact_values"]

_RULES: tuple[Rule, ...] = vendor_rules() + catalogue_rules() + context_rules()
_TRIGGERS = frozenset(trigger for rule in _RULES for trigger in rule.triggers)
_BLOCK_RULES = tuple(rule for rule in _RULES if rule.spans_lines)
_LINE_RULES = tuple(rule for rule in _RULES if not rule.spans_lines)
_ALWAYS_RUN = any(not rule.triggers for rule in _LINE_RULES)


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``[REDACTED:<kind>]``.

    Everything that is not a secret is returned unchanged, byte for byte, and
    ``redact(redact(text)) == redact(text)``.
    """
    present = _present(text)
    if not present and not _ALWAYS_RUN:
        return text
    for rule in _BLOCK_RULES:
        if not present.isdisjoint(rule.triggers):
            text = rule.apply(text)
    # Line by line, each line only through the rules whose triggers it holds: a rule
    # scans every position of what it is given, and most lines hold no trigger at all.
    lines = text.split("\n")
    for index, line in enumerate(lines):
        on_line = _present(line, present)
        if not on_line and not _ALWAYS_RUN:
            continue
        for rule in _LINE_RULES:
            if not rule.triggers or not on_line.isdisjoint(rule.triggers):
                line = rule.apply(line)
        lines[index] = line
    return "\n".join(lines)


def _present(text: str, among: frozenset[str] | set[str] = _TRIGGERS) -> set[str]:
    # casefold, not lower: it maps every character re.IGNORECASE treats as a letter's
    # other case (e.g. the Kelvin sign) onto the ASCII trigger.
    folded = text.casefold()
    return {trigger for trigger in among if trigger in folded}


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
