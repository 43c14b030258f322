"""Queries on signing keys and attestations. The caller owns the transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.blobs import upsert
from registry.db.tables import Attestation, BigId, SigningKey, Skill, Version


@dataclass(frozen=True, slots=True)
class KeyRow:
    key_id: str
    public_key: str
    created_at: datetime
    retired_at: datetime | None
    endorsement: bytes | None


@dataclass(frozen=True, slots=True)
class AttestationRow:
    version_id: int
    key_id: str
    package_digest: str
    digest: str
    envelope: bytes


_KEY = (
    SigningKey.key_id,
    SigningKey.public_key,
    SigningKey.created_at,
    SigningKey.retired_at,
    SigningKey.endorsement,
)


async def keys(conn: AsyncConnection) -> list[KeyRow]:
    """Every key, oldest first."""
    rows = await conn.execute(sa.select(*_KEY).order_by(SigningKey.created_at, SigningKey.key_id))
    return [KeyRow(*r) for r in rows]


async def key(conn: AsyncConnection, key_id: str) -> KeyRow | None:
    row = (await conn.execute(sa.select(*_KEY).where(SigningKey.key_id == key_id))).first()
    return None if row is None else KeyRow(*row)


async def insert_key(
    conn: AsyncConnection,
    key_id: str,
    public_key: str,
    now: datetime,
    endorsement: bytes | None = None,
) -> None:
    """Record a public key; nothing if it is there already (two processes may race here)."""
    insert = upsert(conn, SigningKey).values(
        key_id=key_id, public_key=public_key, created_at=now, endorsement=endorsement
    )
    await conn.execute(insert.on_conflict_do_nothing(index_elements=["key_id"]))


async def retire_keys(conn: AsyncConnection, keep: str, now: datetime) -> list[str]:
    """Retire every key but `keep` that is not retired yet; their ids."""
    live = await conn.execute(
        sa.select(SigningKey.key_id).where(
            SigningKey.retired_at.is_(None), SigningKey.key_id != keep
        )
    )
    retired = [r.key_id for r in live]
    if retired:
        await conn.execute(
            sa.update(SigningKey).where(SigningKey.key_id.in_(retired)).values(retired_at=now)
        )
    return retired


async def insert_attestation(
    conn: AsyncConnection,
    *,
    version_id: int,
    workspace: str,
    key_id: str,
    package_digest: str,
    digest: str,
    envelope: bytes,
) -> bool:
    """Store a version's attestation if its key is registered and not retired.

    One statement: the key's state is read where the row is written. False if it is not.
    """
    values = sa.select(
        sa.literal(version_id, BigId),
        sa.literal(workspace),
        SigningKey.key_id,
        sa.literal(package_digest),
        sa.literal(digest),
        sa.literal(envelope, sa.LargeBinary),
    ).where(SigningKey.key_id == key_id, SigningKey.retired_at.is_(None))
    columns = ["version_id", "workspace", "key_id", "package_digest", "digest", "envelope"]
    insert = sa.insert(Attestation).from_select(columns, values)
    stored = await conn.execute(insert.returning(Attestation.version_id))
    return stored.scalar_one_or_none() is not None


async def attestation(
    conn: AsyncConnection, workspace: str, version_id: int
) -> AttestationRow | None:
    """A version's attestation, in `workspace` only (an id elsewhere is none)."""
    row = (
        await conn.execute(
            sa.select(
                Attestation.version_id,
                Attestation.key_id,
                Attestation.package_digest,
                Attestation.digest,
                Attestation.envelope,
            ).where(Attestation.version_id == version_id, Attestation.workspace == workspace)
        )
    ).first()
    return None if row is None else AttestationRow(*row)


async def digests_of_heads(conn: AsyncConnection, skill_ids: list[int]) -> dict[int, str]:
    """The attestation digest of each skill's head, by skill id (unsigned heads: absent)."""
    return {k: digest for k, (digest, _) in (await attested_heads(conn, skill_ids)).items()}


async def attested_heads(conn: AsyncConnection, skill_ids: list[int]) -> dict[int, tuple[str, str]]:
    """Each skill's head's attestation digest and package digest, by skill id."""
    if not skill_ids:
        return {}
    rows = await conn.execute(
        sa.select(Skill.id, Attestation.digest, Attestation.package_digest)
        .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
        .join(Attestation, Attestation.version_id == Version.id)
        .where(Skill.id.in_(skill_ids))
    )
    return {r[0]: (r[1], r[2]) for r in rows}


async def principal(conn: AsyncConnection, version_id: int) -> str | None:
    return (
        await conn.execute(sa.select(Version.principal).where(Version.id == version_id))
    ).scalar_one_or_none()
