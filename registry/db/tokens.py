"""Queries on access tokens and ended console sessions.

The caller owns the transaction (and, for writes, the lock).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.blobs import upsert
from registry.db.tables import ApiToken, EndedSession


@dataclass(frozen=True, slots=True)
class TokenRow:
    """A token row, secret hash included (it never leaves the services layer)."""

    id: str
    workspace: str
    role: str
    name: str
    secret_hash: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


_COLUMNS = tuple(getattr(ApiToken, f) for f in TokenRow.__slots__)


def _row(row: sa.Row[Any]) -> TokenRow:
    return TokenRow(**row._asdict())


async def insert(
    conn: AsyncConnection,
    *,
    token_id: str,
    workspace: str,
    role: str,
    name: str,
    secret_hash: str,
    now: datetime,
) -> TokenRow:
    await conn.execute(
        sa.insert(ApiToken).values(
            id=token_id,
            workspace=workspace,
            role=role,
            name=name,
            secret_hash=secret_hash,
            created_at=now,
        )
    )
    return TokenRow(token_id, workspace, role, name, secret_hash, now, None, None)


async def get(conn: AsyncConnection, token_id: str) -> TokenRow | None:
    row = (await conn.execute(sa.select(*_COLUMNS).where(ApiToken.id == token_id))).first()
    return None if row is None else _row(row)


async def in_workspace(
    conn: AsyncConnection, workspace: str, *, include_revoked: bool
) -> list[TokenRow]:
    query = sa.select(*_COLUMNS).where(ApiToken.workspace == workspace)
    if not include_revoked:
        query = query.where(ApiToken.revoked_at.is_(None))
    rows = await conn.execute(query.order_by(ApiToken.created_at, ApiToken.id))
    return [_row(r) for r in rows]


async def revoke(conn: AsyncConnection, token_id: str, now: datetime) -> bool:
    """Mark the token revoked; False if it already was."""
    result = await conn.execute(
        sa.update(ApiToken)
        .where(ApiToken.id == token_id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return bool(result.rowcount)


async def touch(
    conn: AsyncConnection, token_id: str, now: datetime, stale_before: datetime
) -> None:
    """Record a use, unless one was recorded after `stale_before` (another request did)."""
    await conn.execute(
        sa.update(ApiToken)
        .where(
            ApiToken.id == token_id,
            sa.or_(ApiToken.last_used_at.is_(None), ApiToken.last_used_at < stale_before),
        )
        .values(last_used_at=now)
    )


async def end_session(
    conn: AsyncConnection, session_id: str, ends_at: datetime, now: datetime
) -> None:
    """Record `session_id` as ended (nothing if it is already), and forget expired ones."""
    await conn.execute(sa.delete(EndedSession).where(EndedSession.ends_at < now))
    insert = upsert(conn, EndedSession).values(session_id=session_id, ends_at=ends_at)
    await conn.execute(insert.on_conflict_do_nothing(index_elements=["session_id"]))


async def session_ended(conn: AsyncConnection, session_id: str) -> bool:
    query = sa.select(EndedSession.session_id).where(EndedSession.session_id == session_id)
    return (await conn.execute(query)).first() is not None
