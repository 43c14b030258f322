"""Migration 0013 fills in the slug skeletons a database already holds, look-alikes included."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from alembic import command

from registry.db.engine import create_engine
from registry.db.migrate import alembic_config
from registry.db.tables import Skill
from registry.domain.skeleton import skeleton
from tests.support.rows import skill_row

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
async def engine(database_url):
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


def _migrate(connection: sa.Connection, direction: str, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    getattr(command, direction)(config, revision)


async def test_the_migration_keeps_existing_look_alikes_and_the_index_refuses_new_ones(
    engine, caplog
):
    async with engine.connect() as conn:
        await conn.run_sync(_migrate, "downgrade", "0012")
        await conn.commit()
    async with engine.begin() as conn:
        await conn.execute(
            sa.insert(Skill.__table__),
            [
                skill_row("λόγος", now=NOW),
                skill_row("λόγοσ", now=NOW),  # written before the rule: a look-alike
                skill_row("pdf-report", now=NOW, state="deleted"),
                skill_row("pdf-report", now=NOW),
                skill_row("λόγοσ", now=NOW, workspace="other"),
            ],
        )
    with caplog.at_level(logging.WARNING, logger="alembic.runtime.migration"):
        async with engine.connect() as conn:
            await conn.run_sync(_migrate, "upgrade", "head")
            await conn.commit()
    assert any("'λόγοσ'" in r.getMessage() and "'λόγος'" in r.getMessage() for r in caplog.records)
    async with engine.connect() as conn:
        found = (
            await conn.execute(
                sa.select(Skill.workspace, Skill.slug, Skill.state, Skill.slug_skeleton).order_by(
                    Skill.id
                )
            )
        ).all()
    assert [tuple(r) for r in found] == [
        ("w", "λόγος", "active", skeleton("λόγος")),
        ("w", "λόγοσ", "active", None),  # the later look-alike keeps working, unmarked
        ("w", "pdf-report", "deleted", skeleton("pdf-report")),
        ("w", "pdf-report", "active", skeleton("pdf-report")),
        ("other", "λόγοσ", "active", skeleton("λόγος")),
    ]
    # The index is the last word: a live row with a taken skeleton is refused.
    with pytest.raises(sa.exc.IntegrityError):
        async with engine.begin() as conn:
            await conn.execute(
                sa.insert(Skill.__table__).values(
                    skill_row("pdf-r\u0435port", now=NOW, slug_skeleton=skeleton("pdf-report"))
                )
            )
