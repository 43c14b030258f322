"""The engine's and the publish transaction's settings on PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry.db.locks import lock_workspace
from registry.domain.model import Scope
from tests.support.packages import package

SCOPE = Scope("w")


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_publish_plans_with_index_scans_and_only_a_publish(make_registry):
    # The driver prepares a statement after five executions, and the server then keeps a
    # generic plan made from the tables' sizes of that moment. In a young database that
    # plan scanned `blobs` whole (the blob check, the uploads made live), and the lock hold
    # doubled over 300 writes (bench/findings.md).
    registry = await make_registry()
    seen: list[str] = []

    @sa.event.listens_for(registry.engine.sync_engine, "before_cursor_execute")
    def _statement(_conn, _cursor, statement, *_args):
        seen.append(" ".join(statement.split()[:2]))

    await registry.write_package(SCOPE, "plans", package("plans"), expected_head=None, actor="t")
    # The publish takes the lock with the setting, first in its transaction.
    publish = seen[seen.index("SELECT pg_advisory_xact_lock(%(key)s),") :]
    assert publish[:3] == [
        "SELECT pg_advisory_xact_lock(%(key)s),",
        "SELECT skills.id,",
        "DELETE FROM",
    ]
    async with registry.engine.connect() as conn:
        after = (await conn.execute(sa.text("SHOW enable_seqscan"))).scalar_one()
        await lock_workspace(conn, "w")
        plain = (await conn.execute(sa.text("SHOW enable_seqscan"))).scalar_one()
        await conn.rollback()
        await lock_workspace(conn, "w", indexed=True)
        indexed = (await conn.execute(sa.text("SHOW enable_seqscan"))).scalar_one()
        await conn.rollback()
        restored = (await conn.execute(sa.text("SHOW enable_seqscan"))).scalar_one()
    assert (after, plain, indexed, restored) == ("on", "on", "off", "on")
