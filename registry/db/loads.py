"""Queries on loads: which version a runtime loaded for a conversation.

Every query filters by workspace; the caller owns the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Load


@dataclass(frozen=True, slots=True)
class LoadRow:
    """A recorded load."""

    id: int
    workspace: str
    agent: str
    slug: str
    skill_id: int
    version: int
    manifest_hash: str
    conversation: str
    loaded_at: datetime


_COLUMNS = tuple(getattr(Load, f) for f in LoadRow.__slots__)


def _row(row: sa.Row[Any]) -> LoadRow:
    return LoadRow(**row._asdict())


async def find(
    conn: AsyncConnection, workspace: str, skill_id: int, version: int, conversation: str
) -> LoadRow | None:
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                Load.workspace == workspace,
                Load.skill_id == skill_id,
                Load.version == version,
                Load.conversation == conversation,
            )
        )
    ).first()
    return None if row is None else _row(row)


async def record(conn: AsyncConnection, row: LoadRow) -> int:
    load_id = await conn.scalar(
        sa.insert(Load)
        .values(
            workspace=row.workspace,
            agent=row.agent,
            slug=row.slug,
            skill_id=row.skill_id,
            version=row.version,
            manifest_hash=row.manifest_hash,
            conversation=row.conversation,
            loaded_at=row.loaded_at,
        )
        .returning(Load.id)
    )
    assert load_id is not None
    return int(load_id)


async def of_conversation(
    conn: AsyncConnection, workspace: str, conversation: str
) -> list[LoadRow]:
    """The loads of a conversation, in the order they were recorded."""
    rows = await conn.execute(
        sa.select(*_COLUMNS)
        .where(Load.workspace == workspace, Load.conversation == conversation)
        .order_by(Load.id)
    )
    return [_row(r) for r in rows]
