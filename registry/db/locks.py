"""Advisory locks: one per workspace for the publish transaction, one for migrations, turns.

PostgreSQL: `pg_advisory_xact_lock` with a 64-bit key computed here from BLAKE3, never the
32-bit `hashtext()`, whose collisions would make unrelated workspaces wait for each other.
The lock is released by the transaction's end (commit, rollback or a dropped connection),
so a crashed writer cannot keep it. SQLite: a write transaction starts with
`BEGIN IMMEDIATE`, which takes the database's single write lock; nothing more is needed.

A turn (`UnitOfWork.turn`, PostgreSQL only) is a session-level lock on a key of its own
namespace ("turn"), held across transactions on a connection kept for it; it never waits
while holding a workspace lock, and a publish never waits for a turn, so the two cannot
deadlock.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from blake3 import blake3
from sqlalchemy.ext.asyncio import AsyncConnection


def lock_key(namespace: str, name: str) -> int:
    """A stable signed 64-bit advisory lock key for `name` within `namespace`."""
    digest = blake3(f"skillreg:{namespace}:{name}".encode()).digest(length=8)
    return int.from_bytes(digest, "big", signed=True)


MIGRATIONS_LOCK_KEY = lock_key("migrations", "alembic")
TAKE_TURN: Final = sa.text("SELECT pg_advisory_lock(:key)")
GIVE_TURN: Final = sa.text("SELECT pg_advisory_unlock(:key)")


_LOCK: Final = sa.text("SELECT pg_advisory_xact_lock(:key)")
# The same, and for the rest of the transaction no plan scans a table that an index serves.
# The driver prepares a statement once it has run it a few times, and the server then
# keeps a generic plan for the connection's life, made from the tables' sizes of that
# moment: in a young database it scanned `blobs` whole, and a publish's lock hold grew with
# every blob stored until autovacuum caught up. Every statement of a publish is a lookup by
# key (docs/write-path.md, "Plans").
_LOCK_INDEXED: Final = sa.text(
    "SELECT pg_advisory_xact_lock(:key), set_config('enable_seqscan', 'off', true)"
)
_LOCK_TIMEOUT: Final = sa.text("SELECT set_config('lock_timeout', :ms, true)")


async def lock_workspace(
    conn: AsyncConnection,
    workspace: str,
    *,
    indexed: bool = False,
    lock_timeout_ms: int | None = None,
) -> None:
    """Take the workspace's transaction-scoped lock (waits up to `lock_timeout`).

    `indexed` (PostgreSQL): the transaction's later statements are planned with index scans
    wherever an index serves them (`enable_seqscan = off`, local to the transaction).
    `lock_timeout_ms` shortens the wait for this transaction (`SET LOCAL`, first). On
    SQLite the transaction's `BEGIN IMMEDIATE` is the lock: nothing runs here.
    """
    if conn.dialect.name != "postgresql":
        return
    if lock_timeout_ms is not None:
        await conn.execute(_LOCK_TIMEOUT, {"ms": str(lock_timeout_ms)})
    key = lock_key("workspace", workspace)
    await conn.execute(_LOCK_INDEXED if indexed else _LOCK, {"key": key})
