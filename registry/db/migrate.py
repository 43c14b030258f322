"""Running the Alembic history programmatically (`skillreg init`, the test harness)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncEngine

from registry.db import errors as db_errors


def migrations_dir() -> Path:
    """Where the migration scripts live: the source tree, or inside an installed wheel."""
    source_tree = Path(__file__).resolve().parents[2] / "migrations"
    if (source_tree / "env.py").is_file():
        return source_tree
    packaged = Path(str(resources.files("registry") / "_migrations"))
    if (packaged / "env.py").is_file():
        return packaged
    msg = f"migration scripts not found (looked in {source_tree} and {packaged})"
    raise FileNotFoundError(msg)


def alembic_config() -> Config:
    """An Alembic configuration pointing at the registry's migration scripts."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    """The newest revision in the history."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def _upgrade(connection: sa.Connection, config: Config) -> None:
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def _current(connection: sa.Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


@asynccontextmanager
async def _translated(engine: AsyncEngine) -> AsyncIterator[None]:
    """A database that cannot be reached is `StorageUnavailable`, naming it (password hidden)."""
    try:
        yield
    except db_errors.DATABASE_ERRORS as exc:
        database = engine.url.render_as_string(hide_password=True)
        raise db_errors.translate(exc, database=database) from exc


async def upgrade(engine: AsyncEngine) -> None:
    """Create or upgrade the schema to the newest revision (idempotent)."""
    config = alembic_config()
    async with _translated(engine), engine.connect() as connection:
        await connection.run_sync(_upgrade, config)
        await connection.commit()


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    async with _translated(engine), engine.connect() as connection:
        return await connection.run_sync(_current)
