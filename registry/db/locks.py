"""Advisory locks: one per workspace for the publish transaction, one for migrations.

PostgreSQL: `pg_advisory_xact_lock` with a 64-bit key computed here from BLAKE3, never the
32-bit `hashtext()`, whose collisions would make unrelated workspaces wait for each other.
The lock is released by the transaction's end (commit, rollback or a dropped connection),
so a crashed writer cannot keep it. SQLite: a write transaction starts with
`BEGIN IMMEDIATE`, which takes the database's single write lock; nothing more is needed.
"""

from __future__ import annotations

import sqlalchemy as sa
from blake3 import blake3
from sqlalchemy.ext.asyncio import AsyncConnection


def lock_key(namespace: str, name: str) -> int:
    """A stable signed 64-bit advisory lock key for `name` within `namespace`."""
    digest = blake3(f"skillreg:{namespace}:{name}".encode()).digest(length=8)
    return int.from_bytes(digest, "big", signed=True)


MIGRATIONS_LOCK_KEY = lock_key("migrations", "alembic")


async def lock_workspace(conn: AsyncConnection, workspace: str) -> None:
    """Take the workspace's transaction-scoped lock (waits up to `lock_timeout`)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(:key)"),
            {"key": lock_key("workspace", workspace)},
        )
