"""The lock scenario's references, on both databases: what each leaves behind.

The empty locked transaction commits nothing, so its commit has nothing to flush; the
durable one commits one row, so its commit waits for the log's flush as a publish's does;
the compare-and-swap transaction moves a head and inserts ten rows. Nothing here is timed.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from bench.content import KiB, package
from bench.references import (
    add_probe_table,
    cas_transaction,
    checked_floor,
    durable_locked_transaction,
    empty_locked_transaction,
)
from blobstore import compute_digest
from tests.corpus import fakes


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


async def test_the_compare_and_swap_transaction_moves_the_head_and_adds_ten_rows(make_registry):
    registry = await make_registry()
    engine = registry.engine
    await add_probe_table(engine)
    await add_probe_table(engine)  # the head row is made once
    await cas_transaction(engine, "w")
    await cas_transaction(engine, "w")
    async with engine.connect() as conn:
        head = (await conn.execute(sa.text("SELECT head FROM bench_head"))).scalars().all()
        rows = (
            await conn.execute(
                sa.text("SELECT head, count(*) FROM bench_rows GROUP BY head ORDER BY head")
            )
        ).all()
    assert head == [2]
    assert [tuple(r) for r in rows] == [(1, 10), (2, 10)]


async def test_the_checked_floor_stores_every_blob_and_refuses_a_finding(make_registry):
    registry = await make_registry()
    files = package("checked", files=3, size=2 * KiB, tag="checked floor")
    seconds = await checked_floor(registry.blobs, registry.engine, "w", files, concurrency=4)
    assert seconds > 0
    for data in files.values():
        assert await registry.blobs.get(compute_digest(data)) == data
    leaked = {
        **files,
        "scripts/env.sh": b"export AWS_KEY=" + fakes.ALL["aws_access_key_id"].encode(),
    }
    with pytest.raises(RuntimeError, match="finding"):
        await checked_floor(registry.blobs, registry.engine, "w", leaked, concurrency=4)
