"""A revocation's rows, recorded in the caller's locked transaction (docs/revocation.md).

A yank of a head is a package write: the head moves to the newest version still allowed
as a new version (origin `revocation`), and `record` runs inside that write's locked
transaction, after the version's rows, so the revocation, the head's move, their signed
statements and their events commit together or not at all. A yank of an older version,
or of a head nothing can replace (its use stops), records in a locked transaction of
its own (`services/history/revocations.py`). Either way, under the lock:

    the version exists and has no revocation in force     else VersionRevoked (settled)
    the statement (the registry's key) is signed and stored with the row
    one `version.revoked` event carries what a consumer needs to act
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.domain.attestation import envelope_digest, package_digest, statement
from registry.domain.model import Scope
from registry.domain.revocation import REVOCATION_PREDICATE, RevocationFacts
from registry.errors import VersionNotFound, VersionRevoked
from registry.services.context import Context
from registry.services.trust import attest, keys
from registry.services.write.request import Revoking

REVOKED: Final = "version.revoked"
UNREVOKED: Final = "version.unrevoked"


def ready(ctx: Context) -> None:
    """Refuse a yank before anything is read or recorded if the registry cannot sign it."""
    attest.ready(ctx)


def sign(ctx: Context, facts: RevocationFacts, package_digest: str) -> bytes:
    """The registry's signed statement about a revocation (or its withdrawal)."""
    signer = ctx.signing.signer
    assert signer is not None, "attest.ready() ran before the lock"
    document = statement(facts.subject, package_digest, facts.predicate(), REVOCATION_PREDICATE)
    return signer.sign(document)


async def record(
    ctx: Context,
    conn: AsyncConnection,
    scope: Scope,
    skill: db_skills.SkillRow,
    revoking: Revoking,
    *,
    head: int | None,
    use_stopped: bool,
    now: datetime,
) -> dict[str, Any]:
    """Record the revocation of `revoking.version` of `skill` (lock held); the event payload.

    `head` is the version the head moved to (None: it did not move); `use_stopped` says
    the skill's use stops in this transaction because no version is left to use.
    """
    number = revoking.version
    row = await db_skills.version(conn, skill, number)
    if row is None:
        raise VersionNotFound(skill.slug, number)
    existing = await db_revocations.of_version(conn, scope.workspace, skill.id, number)
    if existing is not None:
        raise VersionRevoked(skill.slug, number, existing.kind, existing.reason)
    manifest = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
    facts = RevocationFacts(
        workspace=scope.workspace,
        agent=scope.agent,
        slug=skill.slug,
        version=number,
        manifest_hash=row.manifest_hash,
        kind=revoking.kind,
        reason=revoking.reason,
        principal=ctx.principal,
        declared_actor=revoking.actor,
        time=now,
        head=head,
    )
    if not ctx.signing.registered:
        assert ctx.signing.signer is not None
        await keys.register_in(conn, ctx.signing.signer, now)
    envelope = sign(ctx, facts, package_digest(manifest))
    revocation_id = await db_revocations.add(
        conn,
        scope,
        skill_id=skill.id,
        slug=skill.slug,
        version=number,
        manifest_hash=row.manifest_hash,
        kind=revoking.kind,
        reason=revoking.reason,
        actor=revoking.actor,
        principal=ctx.principal,
        envelope=envelope,
        now=now,
    )
    payload: dict[str, Any] = {
        "revocation": revocation_id,
        "workspace": scope.workspace,
        "agent": scope.agent,
        "slug": skill.slug,
        "version": number,
        "manifest_hash": row.manifest_hash,
        "kind": revoking.kind,
        "reason": revoking.reason,
        "actor": revoking.actor,
        "principal": ctx.principal,
        "head": head,
        "use_stopped": use_stopped,
        "statement": envelope_digest(envelope),
    }
    await db_skills.insert_event(
        conn,
        scope,
        skill.slug,
        skill_id=skill.id,
        kind=REVOKED,
        version=number,
        manifest_hash=row.manifest_hash,
        payload=payload,
        now=now,
    )
    return payload
