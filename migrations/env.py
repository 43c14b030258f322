"""Alembic environment: async, one history for PostgreSQL and SQLite (batch mode on SQLite).

`skillreg init` passes an open connection in `config.attributes["connection"]`; the
`alembic` command line builds its own engine from `sqlalchemy.url` or the settings.
"""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from alembic import context

from registry.db.engine import create_engine
from registry.db.locks import MIGRATIONS_LOCK_KEY
from registry.db.tables import Base, UtcDateTime
from registry.db.tables.search import outside_model
from registry.settings import Settings

config = context.config
target_metadata = Base.metadata


def _database_url() -> str:
    return config.get_main_option("sqlalchemy.url") or Settings().database_url


def _render_item(type_: str, obj: object, _autogen_context: object) -> str | bool:
    # Migrations must not import application types (the history outlives them):
    # UtcDateTime is stored as a plain timezone-aware DateTime.
    if type_ == "type" and isinstance(obj, UtcDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _include_name(name: str | None, type_: str, parent_names: dict[str, str | None]) -> bool:
    # The full-text index is dialect-specific (an FTS5 table on SQLite, a tsvector column
    # and its GIN index on PostgreSQL), created by migration 0009 outside the model.
    return not outside_model(name, type_, parent_names)


def _run(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=_render_item,
        include_name=_include_name,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Two processes running `skillreg init` at once must not both migrate.
            connection.execute(
                sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATIONS_LOCK_KEY}
            )
        context.run_migrations()


async def _run_async() -> None:
    engine = create_engine(_database_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=_database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        asyncio.run(_run_async())
    else:
        _run(connection)


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
