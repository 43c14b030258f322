"""The engine's session settings on PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry.db import claims, staging
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


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_the_driver_caches_the_conversion_of_every_write_statement(database_url):
    # psycopg converts a query's placeholders once per text, but only caches texts up to
    # MAX_CACHED_STATEMENT_LENGTH characters; the staging statement is longer than its
    # default (4096), and was converted on every execution, with the workspace lock held.
    from psycopg import _queries  # noqa: PLC0415

    engine = create_engine(database_url)
    try:
        dialect = engine.dialect
        texts = [str(s.compile(dialect=dialect)) for s in staging._STATEMENTS.values()]
        texts += [str(claims._CLAIM.compile(dialect=dialect))]
    finally:
        await engine.dispose()
    assert max(len(t) for t in texts) > 4096
    assert max(len(t) for t in texts) <= _queries.MAX_CACHED_STATEMENT_LENGTH
