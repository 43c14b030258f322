"""Signed desired states and key endorsements: what a syncing host verifies before it applies.

Pure, like `attestation.py`: documents in DSSE envelopes (Ed25519), built and checked here;
keys come from the caller (docs/trust.md, "Sync verifies before it applies").

A **signed state** says, under the registry's key, what a scope wants at one moment:

    {"format": "skillreg-state-v1", "workspace", "agent",
     "seq": the workspace's newest outbox event id when it was read, targets' own
            reports left out (only grows),
     "issued", "expires": UTC, ISO 8601,
     "skills": [{"slug", "state", "use_paused", "version", "manifest_hash",
                 "package_digest", "attestation"}, ...],
     "keys": {keyid: public key hex, ...},   every key the registry signed versions with
     "revoked": [{"slug", "version", "manifest_hash", "kind", "reason"}, ...]}

`revoked` lists the scope's versions revoked and in force (docs/revocation.md): a host
never applies a version it lists, even if an entry names it, and can show why it removed
one. A state without the list (a registry before revocations) revokes nothing.

`keys` lets a host verify the attestations of versions signed before a rotation: a key it
learns there verifies attestations only (whose digests the state names), never a state.

`package_digest` is the package's canonical digest (null for a skill not in use: its
files are not served); `attestation` the SHA-256 of the version's attestation envelope
(null for a version published before versions were signed). One signature covers every
skill, so no entry of one moment can be shown beside the entries of another.

A host refuses a state that is older than the one it applied last (**rollback**: a lower
`seq`, or the same `seq` issued earlier) or past its `expires` (**freeze**).

A **key endorsement** is how a rotation reaches hosts: the registry's old key signs the
new one (`{"format": "skillreg-endorsement-v1", "keyid", "public_key", "replaces"}`), so
a host that trusts the old key can follow to the new one and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from registry.domain.attestation import (
    RULE_KEYS,
    RULE_STATEMENT,
    key_id,
    open_envelope,
    raw_public,
    sign,
)
from registry.domain.revocation import Revoked
from registry.errors import AttestationInvalid

STATE_PAYLOAD_TYPE: Final = "application/vnd.skillreg.state+json"
STATE_FORMAT: Final = "skillreg-state-v1"
ENDORSEMENT_PAYLOAD_TYPE: Final = "application/vnd.skillreg.endorsement+json"
ENDORSEMENT_FORMAT: Final = "skillreg-endorsement-v1"

RULE_ROLLBACK: Final = "rollback"
RULE_EXPIRED: Final = "expired"
RULE_MIXED: Final = "mixed_state"


@dataclass(frozen=True)
class StateEntry:
    """One skill of a signed state."""

    slug: str
    state: str
    use_paused: bool
    version: int
    manifest_hash: str
    package_digest: str | None
    attestation: str | None

    def document(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "state": self.state,
            "use_paused": self.use_paused,
            "version": self.version,
            "manifest_hash": self.manifest_hash,
            "package_digest": self.package_digest,
            "attestation": self.attestation,
        }


@dataclass(frozen=True, order=True)
class Freshness:
    """Where a state sits in time: compared as (`seq`, `issued`)."""

    seq: int
    issued: datetime


@dataclass(frozen=True)
class SignedState:
    """A state whose signature verified: the key that signed it, and what it says."""

    key_id: str
    workspace: str
    agent: str
    freshness: Freshness
    expires: datetime
    entries: dict[str, StateEntry]
    keys: dict[str, Ed25519PublicKey]  # the registry's keys, past and present
    revoked: dict[tuple[str, int], Revoked] = field(default_factory=dict)

    def check_fresh(self, last: Freshness | None, now: datetime) -> None:
        """Refuse a state older than `last` (rollback) or past its expiry at `now` (freeze)."""
        if last is not None and self.freshness < last:
            detail = (
                f"sequence {self.freshness.seq} issued {self.freshness.issued.isoformat()}, "
                f"after {last.seq} issued {last.issued.isoformat()} was applied"
            )
            raise AttestationInvalid(RULE_ROLLBACK, detail)
        if now >= self.expires:
            raise AttestationInvalid(RULE_EXPIRED, f"it expired at {self.expires.isoformat()}")


def state_document(
    workspace: str,
    agent: str,
    freshness: Freshness,
    expires: datetime,
    entries: Iterable[StateEntry],
    *,
    keys: Mapping[str, str],
    revoked: Iterable[Revoked] = (),
) -> dict[str, Any]:
    return {
        "revoked": [r.document() for r in sorted(revoked)],
        "keys": dict(sorted(keys.items())),
        "format": STATE_FORMAT,
        "workspace": workspace,
        "agent": agent,
        "seq": freshness.seq,
        "issued": freshness.issued.isoformat(),
        "expires": expires.isoformat(),
        "skills": [e.document() for e in sorted(entries, key=lambda e: e.slug)],
    }


def sign_state(document: Mapping[str, Any], key: Ed25519PrivateKey) -> bytes:
    return sign(document, key, STATE_PAYLOAD_TYPE)


def open_state(envelope: bytes, keys: Mapping[str, Ed25519PublicKey]) -> SignedState:
    """The state `envelope` holds, once signed by one of `keys`; `AttestationInvalid` else."""
    kid, payload = open_envelope(envelope, keys, STATE_PAYLOAD_TYPE)
    return parse_state(kid, payload)


def parse_state(kid: str, payload: bytes) -> SignedState:
    """The state a verified payload says (`AttestationInvalid(malformed_statement)` else)."""
    try:
        body = json.loads(payload)
        entries = [
            StateEntry(
                slug=str(e["slug"]),
                state=str(e["state"]),
                use_paused=bool(e["use_paused"]),
                version=int(e["version"]),
                manifest_hash=str(e["manifest_hash"]),
                package_digest=_optional(e["package_digest"]),
                attestation=_optional(e["attestation"]),
            )
            for e in body["skills"]
        ]
        state = SignedState(
            key_id=kid,
            workspace=str(body["workspace"]),
            agent=str(body["agent"]),
            freshness=Freshness(int(body["seq"]), _instant(body["issued"])),
            expires=_instant(body["expires"]),
            entries={e.slug: e for e in entries},
            keys={
                str(k): Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(v)))
                for k, v in body["keys"].items()
            },
            revoked={(r.slug, r.version): r for r in map(Revoked.parse, body.get("revoked", []))},
        )
        kind = body["format"]
    except (ValueError, KeyError, TypeError) as exc:
        raise AttestationInvalid(RULE_STATEMENT, str(exc)) from None
    if kind != STATE_FORMAT:
        raise AttestationInvalid(RULE_STATEMENT, f"not a signed state: {kind!r}")
    if len(state.entries) != len(entries):
        raise AttestationInvalid(RULE_STATEMENT, "a slug is listed twice")
    if any(key_id(public) != kid for kid, public in state.keys.items()):
        raise AttestationInvalid(RULE_STATEMENT, "a key id does not name its key")
    return state


def endorse(new: Ed25519PublicKey, replaces: Iterable[str], key: Ed25519PrivateKey) -> bytes:
    """`key` vouches for `new`, which takes the place of `replaces` (key ids)."""
    document = {
        "format": ENDORSEMENT_FORMAT,
        "keyid": key_id(new),
        "public_key": raw_public(new).hex(),
        "replaces": sorted(replaces),
    }
    return sign(document, key, ENDORSEMENT_PAYLOAD_TYPE)


def follow(
    trusted: Mapping[str, Ed25519PublicKey], endorsements: Iterable[bytes]
) -> dict[str, Ed25519PublicKey]:
    """The keys a host trusts after walking `endorsements` (oldest first) from `trusted`.

    An endorsement counts only if a key trusted at that point signed it; the key it names
    then replaces the keys it `replaces`. Others are skipped: a host never learns a key
    from anything but a key it trusts.
    """
    current = dict(trusted)
    for envelope in endorsements:
        try:
            _, payload = open_envelope(envelope, current, ENDORSEMENT_PAYLOAD_TYPE)
        except AttestationInvalid:
            continue
        try:
            body = json.loads(payload)
            kind = body["format"]
            kid = str(body["keyid"])
            public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(body["public_key"])))
            replaces = {str(k) for k in body["replaces"]}
        except (ValueError, KeyError, TypeError) as exc:
            raise AttestationInvalid(RULE_KEYS, f"an endorsement: {exc}") from None
        if kind != ENDORSEMENT_FORMAT or key_id(public) != kid:
            raise AttestationInvalid(RULE_KEYS, f"an endorsement of {kid[:16]} does not name it")
        current = {k: v for k, v in current.items() if k not in replaces}
        current[kid] = public
    return current


def _optional(value: object) -> str | None:
    return None if value is None else str(value)


def _instant(value: object) -> datetime:
    found = datetime.fromisoformat(str(value))
    if found.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return found
