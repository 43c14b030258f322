"""Access tokens as values: roles and their order, the token format, the stored hash.

A token is `skr_<id>_<secret>`: `id` (16 lower-case hex characters) names the row that
holds the token's workspace and role, `secret` (43 URL-safe base64 characters, 32 random
bytes) proves possession. Only the BLAKE3 hash of the secret is stored; the whole token is
shown once, when it is created. A secret with 256 bits of entropy needs no slow key
derivation: nobody can guess it, and the hash cannot be inverted.

Pure: generating the random parts is the service's job (`registry/services/ops/tokens.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from blake3 import blake3

from registry.errors import InvalidName

TOKEN_PREFIX: Final = "skr_"  # noqa: S105 - a prefix that marks tokens, not a secret
_TOKEN: Final = re.compile(r"skr_(?P<id>[0-9a-f]{16})_(?P<secret>[A-Za-z0-9_-]{43})")
_TOKEN_ID: Final = re.compile(r"[0-9a-f]{16}")


class Role(StrEnum):
    """What a token may do in its workspace; each role includes the ones before it."""

    READ = "read"  # every read: skills, versions, files, history, diffs, proposals, states
    WRITE = "write"  # publish packages and upload blobs
    OWNER = "owner"  # restore, delete, decide proposals, change controls
    ADMIN = "admin"  # everything, and the service-wide operator status

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def allows(self, needed: Role) -> bool:
        """True if a token with this role may do what `needed` guards."""
        return self.rank >= needed.rank


_RANKS: Final = {role: rank for rank, role in enumerate(Role)}


def parse_role(value: str) -> Role:
    """The role named `value` (`InvalidName` for anything else)."""
    try:
        return Role(value)
    except ValueError:
        raise InvalidName("role", value, f"one of {', '.join(r.value for r in Role)}") from None


@dataclass(frozen=True, slots=True)
class PresentedToken:
    """A token as a client presented it, split into its id and its secret."""

    token_id: str
    secret: str


def format_token(token_id: str, secret: str) -> str:
    """The bearer string for a token id and secret."""
    return f"{TOKEN_PREFIX}{token_id}_{secret}"


def parse_token(value: str) -> PresentedToken | None:
    """Split a bearer string; None if it is not shaped like a token."""
    match = _TOKEN.fullmatch(value)
    if match is None:
        return None
    return PresentedToken(match["id"], match["secret"])


def is_token_id(value: str) -> bool:
    """True if `value` is shaped like a token id."""
    return _TOKEN_ID.fullmatch(value) is not None


def secret_hash(secret: str) -> str:
    """The stored form of a secret: lower-case hex BLAKE3."""
    return blake3(secret.encode("ascii")).hexdigest()
