"""The engine's session settings on PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry.db.engine import create_engine


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_every_execution_is_planned_for_its_parameters(database_url):
    # The driver prepares a statement after five executions; with the server's default
    # (`auto`) the connection could then keep a generic plan made while the tables were
    # small. In a young database that plan scanned `blobs` whole, twice per write, and
    # the lock hold doubled over the first 200 versions of one skill (bench/findings.md).
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            mode = (await conn.execute(sa.text("SHOW plan_cache_mode"))).scalar_one()
    finally:
        await engine.dispose()
    assert mode == "force_custom_plan"
