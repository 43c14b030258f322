"""The lock scenario's two references, on both databases: what each leaves behind.

The empty locked transaction commits nothing, so its commit has nothing to flush; the
durable one commits one row, so its commit waits for the log's flush as a publish's does.
Nothing here is timed.
"""

from __future__ import annotations

import sqlalchemy as sa

from bench.references import add_probe_table, durable_locked_transaction, empty_locked_transaction


async def _probe_rows(engine: sa.ext.asyncio.AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(sa.text("SELECT count(*) FROM bench_probe"))).scalar_one())


async def test_the_durable_locked_transaction_commits_one_row_and_the_empty_one_none(
    make_registry,
):
    registry = await make_registry()
    engine = registry.engine
    await add_probe_table(engine)
    await add_probe_table(engine)  # idempotent: each backend of a run adds it once
    await empty_locked_transaction(engine, "w")
    assert await _probe_rows(engine) == 0
    await durable_locked_transaction(engine, "w")
    await durable_locked_transaction(engine, "w")
    assert await _probe_rows(engine) == 2
