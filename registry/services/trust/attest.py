"""Every version's attestation: signed in the transaction that publishes it, read back, checked.

    ready    before the write takes any lock: the registry has a key, and its public key
             is registered (once per process); else `SigningKeyUnavailable` and nothing
             is stored
    record   under the workspace lock, right after the version's row: the Statement about
             the package's canonical digest, with who wrote it and why, signed, stored
    read     a version's envelope, with its digest, key and manifest
    check    verify an envelope against trusted keys and a package's files (offline)
    verified read, then check with the registry's own keys

A version and its attestation commit together, so a reader never sees a head whose
attestation cannot be fetched. The predicate (docs/trust.md, "What a version's attestation
says"):

    workspace, agent, slug, version, parent      where the version sits
    origin, restored_from                        how it came to be
    principal                                    who really wrote it (`token:<id>`, `os:<user>`)
    declared_actor                               who the writer said it was, as declared
    message, sources                             the writer's words and references
    proposal, decided_by, approvals              the decision that let it in, if any
    manifest_hash                                the registry's own name for the package
    time                                         when it was published (UTC, ISO 8601)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import keys as db_keys
from registry.db import skills as db_skills
from registry.domain.approvals import Approval
from registry.domain.attestation import (
    RULE_SUBJECT,
    Verified,
    envelope_digest,
    package_digest,
    statement,
    verify,
)
from registry.domain.manifest import Manifest
from registry.domain.model import Scope
from registry.errors import AttestationInvalid, AttestationMissing, SigningKeyUnavailable
from registry.services.context import Context
from registry.services.read import locate
from registry.services.signing import Signer, Signing
from registry.services.trust import keys


def ready(ctx: Context) -> Signer:
    """The signer every write of this registry uses; refused if there is none.

    Called before a write stores anything, so a registry without a key stores nothing.
    """
    signer = ctx.signing.signer
    if signer is None:
        where = ctx.settings.signing_key_file
        raise SigningKeyUnavailable(where, "no key: run `skillreg init` or `skillreg keys create`")
    return signer


@dataclass(frozen=True)
class Facts:
    """What a version's statement says, gathered by the write under the lock."""

    scope: Scope
    slug: str
    version: int
    parent: int | None
    origin: str
    restored_from: int | None
    principal: str
    declared_actor: str
    message: str
    sources: Sequence[str]
    proposal: int | None
    decided_by: str | None
    approvals: Sequence[Approval]
    manifest: Manifest
    time: datetime

    def predicate(self) -> dict[str, Any]:
        return {
            "workspace": self.scope.workspace,
            "agent": self.scope.agent,
            "slug": self.slug,
            "version": self.version,
            "parent": self.parent,
            "origin": self.origin,
            "restored_from": self.restored_from,
            "principal": self.principal,
            "declared_actor": self.declared_actor,
            "message": self.message,
            "sources": list(self.sources),
            "proposal": self.proposal,
            "decided_by": self.decided_by,
            "approvals": [
                {
                    "path": a.path,
                    "pattern_class": a.pattern_class,
                    "value_hash": a.value_hash,
                    "occurrences": a.occurrences,
                }
                for a in self.approvals
            ],
            "manifest_hash": self.manifest.hash,
            "time": self.time.isoformat(),
        }


def subject(scope: Scope, slug: str, version: int) -> str:
    """The Statement's subject name: `workspace/agent/slug@version`."""
    return f"{scope.workspace}/{scope.agent}/{slug}@{version}"


async def record(conn: AsyncConnection, signing: Signing, version_id: int, facts: Facts) -> str:
    """Sign the version's statement and store it (lock held); the envelope's digest.

    The process's first signature also records its public key, in the same transaction
    (refused if that key was retired), so a write stays two transactions; `registered` is
    set once the write has committed (`publish`).
    """
    signer = signing.signer
    assert signer is not None, "ready() ran before the lock"
    if not signing.registered:
        await keys.register_in(conn, signer, facts.time)
    digest = package_digest(facts.manifest)
    envelope = signer.sign(
        statement(subject(facts.scope, facts.slug, facts.version), digest, facts.predicate())
    )
    sealed = envelope_digest(envelope)
    stored = await db_keys.insert_attestation(
        conn,
        version_id=version_id,
        workspace=facts.scope.workspace,
        key_id=signer.key_id,
        package_digest=digest,
        digest=sealed,
        envelope=envelope,
    )
    if not stored:  # rotated by another process since this one loaded its key
        detail = "this key was retired; give the process the current one"
        raise SigningKeyUnavailable(signer.key_id[:16], detail)
    return sealed


def check(
    envelope: bytes,
    trusted: Mapping[str, Any],
    manifest: Manifest,
    *,
    expected_subject: str | None = None,
) -> Verified:
    """Verify `envelope` with `trusted` keys and that it is about `manifest`'s files.

    `AttestationInvalid`: the signature (see `registry.domain.attestation.verify`), or
    `subject_mismatch` when the statement names other files or another version.
    """
    verified = verify(envelope, trusted)
    digest = package_digest(manifest)
    if verified.digest != digest:
        detail = f"it attests {verified.digest[:16]}, the files are {digest[:16]}"
        raise AttestationInvalid(RULE_SUBJECT, detail)
    if expected_subject is not None and verified.subject != expected_subject:
        detail = f"it is about {verified.subject!r}, not {expected_subject!r}"
        raise AttestationInvalid(RULE_SUBJECT, detail)
    return verified


@dataclass(frozen=True)
class VersionAttestation:
    """A version's attestation as stored: the envelope, its digest and the key that signed."""

    slug: str
    version: int
    subject: str
    key_id: str
    package_digest: str
    digest: str  # SHA-256 of `envelope`
    envelope: bytes
    manifest: Manifest


async def read(ctx: Context, scope: Scope, slug: str, version: int | None) -> VersionAttestation:
    """A version's attestation (the head's if `version` is None), with its manifest.

    `AttestationMissing` for a version published before versions were signed.
    """

    async def work(conn: AsyncConnection) -> tuple[int, db_keys.AttestationRow | None, Manifest]:
        _, row = await locate(conn, scope, slug, version)
        found = await db_keys.attestation(conn, scope.workspace, row.id)
        manifest = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
        return row.number, found, manifest

    number, found, manifest = await ctx.read(work)
    if found is None:
        raise AttestationMissing(slug, number)
    return VersionAttestation(
        slug=slug,
        version=number,
        subject=subject(scope, slug, number),
        key_id=found.key_id,
        package_digest=found.package_digest,
        digest=found.digest,
        envelope=found.envelope,
        manifest=manifest,
    )


async def verified(ctx: Context, scope: Scope, slug: str, version: int | None) -> Verified:
    """A version's attestation checked against the registry's keys and its own files."""
    stored = await read(ctx, scope, slug, version)
    trusted = keys.public_keys(await keys.listing(ctx, ctx.signing.signer))
    return check(stored.envelope, trusted, stored.manifest, expected_subject=stored.subject)
