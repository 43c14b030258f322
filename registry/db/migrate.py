"""Running the Alembic history programmatically (`skillreg init`, the test harness).

`skillreg init` first makes sure a PostgreSQL database exists (`ensure_database`): a role that
may create databases gets one; any other gets a one-line message with the `createdb` command.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from registry.db import errors as db_errors
from registry.db.engine import parse_database_url
from registry.db.revision import current_revision, migrations_dir, translated
from registry.errors import StorageUnavailable

__all__ = [
    "alembic_config",
    "current_revision",
    "ensure_database",
    "head_revision",
    "migrations_dir",
    "upgrade",
]

# Where a role connects to create its database: every cluster has `postgres`, unless an
# operator dropped it, and `template1`.
_MAINTENANCE_DATABASES: Final = ("postgres", "template1")
_CONNECT_TIMEOUT: Final = 10
_DUPLICATE_DATABASE: Final = "42P04"
_INSUFFICIENT_PRIVILEGE: Final = "42501"


def alembic_config() -> Config:
    """The Alembic configuration, built here: no `alembic.ini` is read at run time.

    (`alembic.ini` at the repository root serves the `alembic` command line of developers.)
    """
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


async def upgrade(engine: AsyncEngine) -> None:
    """Create or upgrade the schema to the newest revision (idempotent)."""
    config = alembic_config()
    async with translated(engine), engine.connect() as connection:
        await connection.run_sync(_upgrade, config)
        await connection.commit()


async def ensure_database(url: str) -> bool:
    """Create the PostgreSQL database `url` names unless it exists; True if this call made it.

    Nothing happens for SQLite (the file is created on first use) or when the database
    accepts a connection. When it is missing and the role may not create databases, the
    `StorageUnavailable` raised names the `createdb` command to run. Any other failure
    (server down, wrong password) is left for the caller's own connection to report.
    """
    parsed = parse_database_url(url)
    if parsed.get_backend_name() != "postgresql" or not parsed.database:
        return False
    if await _connects(parsed):
        return False
    async with _maintenance_connection(parsed) as connection:
        if connection is None:
            return False
        exists = await connection.scalar(
            sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": parsed.database}
        )
        if exists:
            return False  # the database is there; the caller's connection says what failed
        name = connection.dialect.identifier_preparer.quote_identifier(parsed.database)
        try:
            await connection.execute(sa.text(f"CREATE DATABASE {name}"))
        except sa.exc.DBAPIError as exc:
            state = getattr(exc.orig, "sqlstate", None)
            if state == _DUPLICATE_DATABASE:
                return False  # another `skillreg init` created it a moment ago
            if state == _INSUFFICIENT_PRIVILEGE:
                raise StorageUnavailable("database", _createdb_hint(parsed)) from None
            raise
    return True


def _engine(url: URL) -> AsyncEngine:
    return create_async_engine(
        url,
        poolclass=NullPool,
        isolation_level="AUTOCOMMIT",  # CREATE DATABASE cannot run inside a transaction
        connect_args={"connect_timeout": _CONNECT_TIMEOUT},
    )


async def _connects(url: URL) -> bool:
    engine = _engine(url)
    try:
        async with engine.connect():
            return True
    except db_errors.DATABASE_ERRORS:
        return False
    finally:
        await engine.dispose()


@asynccontextmanager
async def _maintenance_connection(url: URL) -> AsyncIterator[AsyncConnection | None]:
    """A connection to the first maintenance database that accepts the role, else None."""
    for name in _MAINTENANCE_DATABASES:
        engine = _engine(url.set(database=name))
        try:
            try:
                connection = await engine.connect()
            except db_errors.DATABASE_ERRORS:
                continue
            try:
                yield connection
            finally:
                await connection.close()
            return
        finally:
            await engine.dispose()
    yield None


def _createdb_hint(url: URL) -> str:
    argv = ["createdb"]
    if url.host:
        argv += ["-h", url.host]
    if url.port:
        argv += ["-p", str(url.port)]
    argv += ["-U", "postgres"]
    if url.username:
        argv += ["-O", url.username]
    argv.append(str(url.database))
    return (
        f'database "{url.database}" does not exist and role "{url.username}" may not create '
        f"databases; create it as a role that may, e.g. {shlex.join(argv)}"
    )
