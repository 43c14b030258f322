"""What a candidate value looks like: entropy, placeholders, token shapes, secret-looking names.

The content scanner (`scanner.py`) finds candidates with its rules and asks these tests
whether a candidate is a credential; they look at one value (or one name) at a time and
never keep it.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from typing import Final

from registry.domain.windowed import WINDOW

GENERIC_MIN_LENGTH: Final = 16
GENERIC_MIN_ENTROPY: Final = 3.5
"""Bits per character. Random base62 of 16+ characters measures about 3.7 and up; words,
identifiers and repeated characters measure less."""
TOKEN_MIN_ENTROPY: Final = 3.0
"""The floor for a value that already has a token's prefix and length."""


PLACEHOLDER_MARKERS: Final = (
    "your",
    "example",
    "changeme",
    "change_me",
    "change-me",
    "placeholder",
    "dummy",
    "redacted",
    "replace",
    "insert",
    "sample",
    "xxxx",
    "****",
    "...",
    "<",
    ">",
    "${",
    "{{",
    "%(",
)
"""Case-insensitive substrings that mark a value as a stand-in rather than a credential."""


def entropy(value: str) -> float:
    """Shannon entropy of `value`, in bits per character."""
    # Counted a window at a time: a token may be as long as its file. The counts, and the
    # order of first occurrence the sum follows, are those of `Counter(value)`.
    counts: Counter[str] = Counter()
    for at in range(0, len(value), WINDOW):
        counts.update(value[at : at + WINDOW])
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def is_placeholder(value: str) -> bool:
    lowered = value.lower()
    return any(marker in lowered for marker in PLACEHOLDER_MARKERS)


def token_value(value: str) -> bool:
    """Accept a value with a token's shape unless it is a stand-in or repetitive."""
    return not is_placeholder(value) and entropy(value) >= TOKEN_MIN_ENTROPY


def mixed_token(value: str) -> bool:
    """Accept like `token_value`, if the value mixes digits, upper and lower case as keys do.

    `sk-` also starts ordinary kebab-case names (`sk-learn-pipeline`); random keys of the
    lengths the pattern requires practically always mix all three kinds of character.
    """
    return (
        token_value(value)
        and any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def secret_value(value: str) -> bool:
    return not is_placeholder(value) and entropy(value) >= GENERIC_MIN_ENTROPY


SLACK_MIN_LENGTH: Final = 24


def slack_token(value: str) -> bool:
    # Real Slack tokens carry numeric team and user ids: "xoxb-<digits>-<digits>-<random>".
    return len(value) >= SLACK_MIN_LENGTH and any(c.isdigit() for c in value) and token_value(value)


def any_value(_value: str) -> bool:
    return True


# A bare (unquoted) value that is code, not a literal: `os.environ["X"]`, `process.env.X`,
# `settings.API_TOKEN`, `get_token()`. A random literal practically never has this shape.
EXPRESSION: Final = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:[(\[].*)?", re.ASCII)
ENV_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]*", re.ASCII)


def generic_value(value: str, *, quoted: bool) -> bool:
    if len(value) < GENERIC_MIN_LENGTH or any(c.isspace() for c in value):
        # Whitespace marks prose ("the token from the dashboard"), not a credential.
        return False
    if value.startswith(("$", "%", "/", "./", "../", "~/")):
        # A variable reference ($X, %X%) or a file path, not the secret itself.
        return False
    if ENV_NAME.fullmatch(value):
        return False
    if not quoted and EXPRESSION.fullmatch(value) and any(c in value for c in ".(["):
        return False
    return secret_value(value)


NAME_PART: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", re.ASCII)
SECRET_WORDS: Final = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "token",
        "auth",
        "credential",
        "credentials",
        "apikey",
        "accesskey",
        "privatekey",
        "secretkey",
        "clientsecret",
    }
)
KEY_QUALIFIERS: Final = frozenset({"api", "access", "private", "signing", "encryption", "master"})
# Names ending in one of these describe a secret (its file, its length, its variable) rather
# than hold it: `password_file`, `token_url`, `api_key_env`, `secret_name`.
DESCRIPTIVE_SUFFIXES: Final = frozenset(
    {
        "arn",
        "at",
        "count",
        "dir",
        "endpoint",
        "env",
        "expires",
        "expiry",
        "field",
        "file",
        "format",
        "header",
        "hint",
        "id",
        "label",
        "len",
        "length",
        "mode",
        "name",
        "path",
        "pattern",
        "prefix",
        "provider",
        "ttl",
        "type",
        "uri",
        "url",
        "var",
    }
)


def is_secret_name(name: str) -> bool:
    """Tell whether an identifier names a secret: `password`, `DB_PASSWORD`, `apiKey`.

    The name is split at `_`, `-`, `.` and case changes; it is secret-looking if a part is a
    secret word, or a part `key` follows `api`, `access`, `private`, `signing`,
    `encryption` or `master`, and the last part does not merely describe a secret.
    """
    parts = [part.lower() for part in NAME_PART.findall(name)]
    if not parts or parts[-1] in DESCRIPTIVE_SUFFIXES:
        return False
    if any(part in SECRET_WORDS for part in parts):
        return True
    return any(a in KEY_QUALIFIERS and b == "key" for a, b in itertools.pairwise(parts))
