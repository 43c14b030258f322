"""Revocations: what a yank says, and the statement the registry signs about it.

This module is pure. A revocation names one version of one skill (`workspace/agent/slug@N`
and its manifest hash), a kind (`security`, `broken`, `policy`) and the owner's text. The
registry signs an in-toto Statement about it (DSSE, Ed25519, its own key) whose subject
is the version's package digest, like a version's attestation; its withdrawal (`unyank`)
is signed the same way with `revoked: false`.

`Revoked` is what the signed desired state lists for a scope (docs/revocation.md), so a
host can prove why it removed a package and refuses to apply one a state names anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from registry.domain.arguments import RULE_MALFORMED, check_text
from registry.errors import ArgumentInvalid

REVOCATION_PREDICATE: Final = "urn:skill-registry:predicate:revocation:v1"
MAX_REASON: Final = 1000


class RevocationKind(StrEnum):
    """Why a version was revoked."""

    SECURITY = "security"
    BROKEN = "broken"
    POLICY = "policy"


def check_kind(value: object) -> RevocationKind:
    """The kind `value` names; `ArgumentInvalid` for anything else."""
    try:
        return RevocationKind(str(value))
    except ValueError:
        kinds = ", ".join(k.value for k in RevocationKind)
        raise ArgumentInvalid("kind", RULE_MALFORMED, f"one of {kinds}") from None


def check_reason(value: object) -> str:
    """A revocation's text: required, one paragraph of at most `MAX_REASON` characters."""
    text = check_text("reason", value, multiline=True)
    if not text.strip():
        raise ArgumentInvalid("reason", RULE_MALFORMED, "a revocation says why (--reason)")
    if len(text) > MAX_REASON:
        raise ArgumentInvalid("reason", RULE_MALFORMED, f"at most {MAX_REASON} characters")
    return text


@dataclass(frozen=True, order=True)
class Revoked:
    """A version in force as revoked, as the signed desired state lists it."""

    slug: str
    version: int
    manifest_hash: str
    kind: str
    reason: str

    def document(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "version": self.version,
            "manifest_hash": self.manifest_hash,
            "kind": self.kind,
            "reason": self.reason,
        }

    @classmethod
    def parse(cls, body: dict[str, Any]) -> Revoked:
        return cls(
            slug=str(body["slug"]),
            version=int(body["version"]),
            manifest_hash=str(body["manifest_hash"]),
            kind=str(body["kind"]),
            reason=str(body["reason"]),
        )


@dataclass(frozen=True)
class RevocationFacts:
    """What a revocation statement says (its subject is the version's package digest)."""

    workspace: str
    agent: str
    slug: str
    version: int
    manifest_hash: str
    kind: str
    reason: str
    principal: str
    declared_actor: str
    time: datetime
    revoked: bool = True  # False: the statement of an unyank
    head: int | None = None  # the head the revocation moved to (origin `revocation`)

    @property
    def subject(self) -> str:
        return f"{self.workspace}/{self.agent}/{self.slug}@{self.version}"

    def predicate(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "agent": self.agent,
            "slug": self.slug,
            "version": self.version,
            "manifest_hash": self.manifest_hash,
            "revoked": self.revoked,
            "kind": self.kind,
            "reason": self.reason,
            "principal": self.principal,
            "declared_actor": self.declared_actor,
            "head": self.head,
            "time": self.time.isoformat(),
        }
