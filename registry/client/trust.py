"""What a syncing host trusts, and the checks it makes before it applies anything.

A host pins the registry's keys once, from what its operator gives it, never from the
server it is about to check (docs/trust.md, "What a host operator does"):

    --trust-keys FILE          a keys document (`skillreg keys export`): its current keys
    --trust-fingerprint ID     a key id: the key is fetched from the registry's keys
                               document and taken only if it hashes to that id

Both are kept in the target's `.skillreg/trust.json` with what the host applied last.
Every run then checks, before the engine sees anything:

    signature     the desired state is signed by a pinned key; a state signed by another
                  key is taken only if a pinned key endorsed it (a rotation: the keys
                  document carries each key's endorsement by the key it replaced)
    rollback      its (sequence, issued) is not older than the state applied last
    freeze        it has not expired; an expired state changes nothing and the host
                  reports itself stale since its last good state expired
    mix-and-match the unsigned listing equals the signed one, entry for entry; each file
                  list hashes to the signed manifest hash, each package to the signed
                  package digest
    attestation   each version's attestation (fetched once, then known by its digest) has
                  the digest the state names, a signature by a key the host followed to,
                  and is about that slug, version and package
    revocation    a version the signed state lists as revoked is never applied, even if
                  an entry or a pin names it; nor one the last applied state listed,
                  unless a newer state no longer does (docs/revocation.md)

A refused state changes nothing on the host; a refused package blocks its skill only.
What the host concluded (verified, stale since, refused and why) is kept in `trust.json`,
and sent to the registry when it changes, for `status`: with the run's first record, or
`PUT .../targets/{id}/trust` (`remote.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from registry.client.http import RegistryClient
from registry.domain.attestation import (
    RULE_SUBJECT,
    RULE_UNKNOWN_KEY,
    envelope_digest,
    keys_from_document,
    package_digest,
    raw_public,
    verify,
)
from registry.domain.display import visible
from registry.domain.manifest import Manifest
from registry.domain.model import Scope
from registry.domain.revocation import Revoked
from registry.domain.signed_state import (
    RULE_EXPIRED,
    RULE_MIXED,
    Freshness,
    SignedState,
    StateEntry,
    follow,
    open_state,
)
from registry.errors import AttestationInvalid, RegistryError, RemoteRefused, TargetInvalid
from registry.wire import DesiredState, TrustReport

KEYS_PATH: Final = "/.well-known/skillreg/keys.json"
RULE_NO_ROOT: Final = "no_pinned_keys"
RULE_UNSIGNED: Final = "unsigned_state"
RULE_PINNED: Final = "pinned_otherwise"
_FORMAT: Final = 1


@dataclass(frozen=True)
class TrustRoot:
    """What the operator tells a host to trust at its first run."""

    keys: Mapping[str, Ed25519PublicKey] | None = None
    fingerprint: str | None = None

    @classmethod
    def from_keys_file(cls, path: Path | str) -> TrustRoot:
        """The current keys of a keys document (`skillreg keys export`)."""
        shown = str(path)
        try:
            document = json.loads(Path(path).read_bytes())
            current = {str(k["keyid"]) for k in document["keys"] if k.get("valid_until") is None}
            found = keys_from_document(document)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            detail = f"not a keys document: {exc}"
            raise RemoteRefused(f"keys file {shown}", RULE_NO_ROOT, detail) from None
        except AttestationInvalid as exc:
            raise RemoteRefused(f"keys file {shown}", exc.rule, exc.detail) from None
        if not current:
            raise RemoteRefused(f"keys file {shown}", RULE_NO_ROOT, "it lists no current key")
        return cls(keys={k: v for k, v in found.items() if k in current})

    @classmethod
    def from_fingerprint(cls, key_id: str) -> TrustRoot:
        value = key_id.strip().lower()
        if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):  # noqa: PLR2004
            detail = "a key id is the 64 hex digits `skillreg keys list` shows"
            raise RemoteRefused("--trust-fingerprint", RULE_NO_ROOT, detail)
        return cls(fingerprint=value)


@dataclass
class Pinned:
    """`trust.json`: the keys a host trusts, and where its last good state stands."""

    keys: dict[str, Ed25519PublicKey]  # sign states (and attestations)
    # Every key followed to or listed by a verified state: they verify attestations only.
    known: dict[str, Ed25519PublicKey]
    last: Freshness | None = None
    expires: datetime | None = None
    verified: set[str] = field(default_factory=set)  # attestation digests checked
    status: str = "verified"
    since: datetime | None = None
    detail: str | None = None
    reported: list[Any] | None = None  # what the registry was last told
    # The versions the last applied state listed as revoked: (slug, version).
    revoked: set[tuple[str, int]] = field(default_factory=set)

    def dumps(self) -> bytes:
        body = {
            "format": _FORMAT,
            "keys": _hex(self.keys),
            "known": _hex(self.known),
            "seq": None if self.last is None else self.last.seq,
            "issued": None if self.last is None else self.last.issued.isoformat(),
            "expires": None if self.expires is None else self.expires.isoformat(),
            "verified": sorted(self.verified),
            "status": self.status,
            "since": None if self.since is None else self.since.isoformat(),
            "detail": self.detail,
            "reported": self.reported,
            "revoked": sorted([slug, version] for slug, version in self.revoked),
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def loads(cls, where: str, data: bytes) -> Pinned:
        """Refused (`TargetInvalid`) if unreadable: pinned keys are never dropped silently."""
        try:
            body = json.loads(data)
            _check_format(body["format"])
            last = None
            if body["seq"] is not None:
                last = Freshness(int(body["seq"]), datetime.fromisoformat(body["issued"]))
            return cls(
                keys=_keys(body["keys"]),
                known=_keys(body["known"]),
                last=last,
                expires=_when(body["expires"]),
                verified={str(d) for d in body["verified"]},
                status=str(body["status"]),
                since=_when(body["since"]),
                detail=body["detail"],
                reported=body["reported"],
                revoked={(str(s), int(v)) for s, v in body.get("revoked", [])},
            )
        except (ValueError, KeyError, TypeError) as exc:
            detail = f"trust.json is unreadable ({exc}); nothing is trusted until it is fixed"
            raise TargetInvalid(where, detail) from None


class HostTrust:
    """The checks of one sync run, over the keys pinned in the target."""

    def __init__(
        self,
        client: RegistryClient,
        scope: Scope,
        root: TrustRoot | None,
        clock: Callable[[], datetime],
    ) -> None:
        self.client = client
        self.scope = scope
        self.root = root
        self.clock = clock
        self.pinned: Pinned | None = None
        self.state: SignedState | None = None
        self.saved: bytes | None = None  # `trust.json` as read or last written
        self.used: set[str] = set()  # the verified attestations this run relied on

    @property
    def _pins(self) -> Pinned:
        assert self.pinned is not None, "pin() first"
        return self.pinned

    async def pin(self, saved: bytes | None, where: str) -> None:
        """The keys of `trust.json`, or of the root the operator gave (the first run)."""
        self.saved = saved
        root = self.root
        if saved is not None:
            self.pinned = Pinned.loads(where, saved)
            given = set() if root is None else set(root.keys or {})
            if root is not None and root.fingerprint is not None:
                given.add(root.fingerprint)
            strangers = given - set(self.pinned.known)
            if strangers:
                detail = (
                    f"this target pinned other keys than {min(strangers)[:16]}; to pin "
                    f"anew, remove {where}/.skillreg/trust.json (it then trusts nothing else)"
                )
                raise RemoteRefused(f"sync from {self.client.url}", RULE_PINNED, detail)
            return
        if root is None:
            detail = (
                "this target has pinned no registry key: pass --trust-keys FILE (from "
                "`skillreg keys export`) or --trust-fingerprint KEYID on the first sync"
            )
            raise RemoteRefused(f"sync from {self.client.url}", RULE_NO_ROOT, detail)
        if root.keys is not None:
            keys = dict(root.keys)
        else:
            assert root.fingerprint is not None
            found = await self._published()
            if root.fingerprint not in found:
                detail = f"the registry's keys document has no key {root.fingerprint[:16]}"
                raise RemoteRefused(f"GET {KEYS_PATH}", RULE_NO_ROOT, detail)
            keys = {root.fingerprint: found[root.fingerprint]}
        self.pinned = Pinned(keys=keys, known=dict(keys))

    async def check_state(self, received: DesiredState) -> SignedState:
        """The signed state of `received`, checked as the module docstring says."""
        what = f"the desired state of {self.client.url}"
        if received.signed is None:
            raise RemoteRefused(what, RULE_UNSIGNED, "the registry sent no signed state")
        envelope = received.signed.encode("utf-8", "surrogatepass")
        state = await self._open(what, envelope)
        if (state.workspace, state.agent) != (self.scope.workspace, self.scope.agent):
            shown = visible(f"{state.workspace}/{state.agent}", 300)
            raise RemoteRefused(what, "wrong_scope", f"signed for {shown}")
        try:
            state.check_fresh(self._pins.last, self.clock())
        except AttestationInvalid as exc:
            raise RemoteRefused(what, exc.rule, exc.detail) from None
        listed = sorted(
            (s.slug, s.state, s.use_paused, s.version, s.manifest_hash) for s in received.skills
        )
        signed = sorted(
            (e.slug, e.state, e.use_paused, e.version, e.manifest_hash)
            for e in state.entries.values()
        )
        if listed != signed:
            odd = sorted(set(listed) ^ set(signed))[:3] or "a repeated entry"
            detail = f"the listing differs from the signed state at {visible(str(odd), 300)}"
            raise RemoteRefused(what, RULE_MIXED, detail)
        self._pins.known |= state.keys  # for attestations made before a rotation
        self.state = state
        return state

    async def _open(self, what: str, envelope: bytes) -> SignedState:
        pins = self._pins
        try:
            return open_state(envelope, pins.keys)
        except AttestationInvalid as exc:
            if exc.rule != RULE_UNKNOWN_KEY:
                raise RemoteRefused(what, exc.rule, exc.detail) from None
        followed = await self._follow()  # signed by a key this host does not trust yet
        try:
            state = open_state(envelope, followed)
        except AttestationInvalid as exc:
            raise RemoteRefused(what, exc.rule, exc.detail) from None
        pins.keys = followed
        pins.known |= followed
        return state

    async def _follow(self) -> dict[str, Ed25519PublicKey]:
        """The pinned keys after the endorsements the registry publishes."""
        answer = await self.client.request("GET", KEYS_PATH)
        try:
            document = json.loads(answer.content)
            endorsements = [
                str(k["endorsement"]).encode() for k in document["keys"] if k.get("endorsement")
            ]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RemoteRefused(f"GET {KEYS_PATH}", "malformed", str(exc)) from None
        try:
            return follow(self._pins.keys, endorsements)
        except AttestationInvalid as exc:
            raise RemoteRefused(f"GET {KEYS_PATH}", exc.rule, exc.detail) from None

    async def _published(self) -> dict[str, Ed25519PublicKey]:
        answer = await self.client.request("GET", KEYS_PATH)
        try:
            return keys_from_document(json.loads(answer.content))
        except ValueError as exc:
            raise RemoteRefused(f"GET {KEYS_PATH}", "malformed", str(exc)) from None
        except AttestationInvalid as exc:
            raise RemoteRefused(f"GET {KEYS_PATH}", exc.rule, exc.detail) from None

    def revoked(self, slug: str, version: int) -> Revoked | None:
        """Why `slug@version` may not be applied, if the state (or the last one) revoked it.

        The last applied state's list counts while this state is not newer (the same
        state served again); a newer one that no longer lists a version took it back.
        """
        state = self.state
        assert state is not None, "check_state() first"
        found = state.revoked.get((slug, version))
        if found is not None:
            return found
        pins = self._pins
        if (slug, version) in pins.revoked and (pins.last is None or state.freshness <= pins.last):
            return Revoked(slug, version, "", "", "revoked by the state applied last")
        return None

    def entry(self, slug: str) -> StateEntry | None:
        return None if self.state is None else self.state.entries.get(slug)

    def known(self, entry: StateEntry, manifest: Manifest) -> bool:
        """True if this entry's attestation was verified for these files before."""
        key = f"{entry.attestation}:{manifest.hash}"
        if key in self._pins.verified:
            self.used.add(key)
            return True
        return False

    async def check_package(
        self,
        slug: str,
        version: int,
        manifest: Manifest,
        base: str,
        *,
        signed: StateEntry | None = None,
    ) -> None:
        """The version's attestation, fetched and checked (see the module docstring).

        `signed` is the version's entry in the signed state: the attestation must have
        the SHA-256 it names, and attest the package digest it names. Without it (a pin,
        bound by the lock's manifest hash), an attestation the registry does not have is
        not needed. Remembered as verified for these files (by their manifest hash, which
        names them). Raises `RemoteRefused` naming the rule.
        """
        what = f"{slug}@{version}"
        subject = f"{self.scope.workspace}/{self.scope.agent}/{slug}@{version}"
        pins = self._pins
        named = None if signed is None else signed.attestation
        known_as = f"{named}:{manifest.hash}" if named else f"pin:{subject}:{manifest.hash}"
        if known_as in pins.verified:
            self.used.add(known_as)
            return
        path = f"{base}/skills/{slug}/versions/{version}/attestation"
        params = {"agent": self.scope.agent}
        answer = await self.client.request("GET", path, ok=(200, 404), params=params)
        if answer.status != 200:  # noqa: PLR2004
            if named is None:
                return  # a pin of a version published before versions were signed
            raise RemoteRefused(what, RULE_SUBJECT, "the signed state names an attestation")
        envelope = answer.content
        if named is not None and envelope_digest(envelope) != named:
            raise RemoteRefused(what, RULE_SUBJECT, "not the attestation the state names")
        try:
            verified = verify(envelope, pins.known)
        except AttestationInvalid as exc:
            raise RemoteRefused(what, exc.rule, exc.detail) from None
        digest = package_digest(manifest)
        if verified.subject != subject or verified.digest != digest:
            raise RemoteRefused(what, RULE_SUBJECT, f"it attests {visible(verified.subject)}")
        if signed is not None and signed.package_digest != digest:
            raise RemoteRefused(what, RULE_SUBJECT, "the files are not the signed package")
        pins.verified.add(known_as)
        self.used.add(known_as)

    # ------------------------------------------------------------ conclusions

    def applied(self, state: SignedState) -> None:
        """The state checked out: remember it; forget attestations no longer relied on."""
        pins = self._pins
        pins.last, pins.expires = state.freshness, state.expires
        pins.verified &= self.used
        pins.revoked = set(state.revoked)
        if pins.status != "verified" or pins.since is None:
            pins.status, pins.since = "verified", self.clock()
        pins.detail = None

    def refused(self, error: RegistryError) -> None:
        """A run refused what it was served: stale if only time ran out, else refused."""
        pins = self.pinned
        if pins is None:
            return
        if isinstance(error, RemoteRefused) and error.rule == RULE_EXPIRED:
            if pins.status != "stale":
                pins.status, pins.since = "stale", pins.expires or self.clock()
            pins.detail = str(error)[:500]
            return
        pins.status, pins.since, pins.detail = "refused", self.clock(), str(error)[:500]

    def report(self) -> TrustReport | None:
        """What to tell the registry, if it differs from what it was told last."""
        pins = self.pinned
        if pins is None or pins.since is None:
            return None
        said = self._said()
        if said == pins.reported:
            return None
        return TrustReport(
            state=pins.status,  # type: ignore[arg-type]  # one of TRUST_STATES, set above
            since=pins.since,
            detail=None if pins.detail is None else visible(pins.detail, 500),
            seq=said[1],
        )

    def told(self) -> None:
        """The registry has the report: not sent again until something changes."""
        self._pins.reported = self._said()

    def _said(self) -> list[Any]:
        pins = self._pins
        seq = None if pins.last is None else pins.last.seq
        return [pins.status, seq, pins.detail if pins.status == "refused" else None]


def _check_format(found: object) -> None:
    if found != _FORMAT:
        raise ValueError(f"format {found!r}")


def _hex(keys: Mapping[str, Ed25519PublicKey]) -> dict[str, str]:
    return {k: raw_public(v).hex() for k, v in sorted(keys.items())}


def _keys(body: Mapping[str, str]) -> dict[str, Ed25519PublicKey]:
    return {str(k): Ed25519PublicKey.from_public_bytes(bytes.fromhex(v)) for k, v in body.items()}


def _when(value: object) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))
