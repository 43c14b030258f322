"""Assembling a registry: settings in, engine and blob store built, everything injected.

This is the one place that turns configuration into objects; nothing else builds an engine
or a blob store from settings, and there are no module-level singletons.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from blobstore import BlobStore, open_blobstore
from registry.db.engine import create_engine, parse_database_url, sqlite_path
from registry.settings import Settings


def missing_database(settings: Settings) -> Path | None:
    """The SQLite file `settings.database_url` names, if it does not exist; else None.

    Opening a missing SQLite file creates it (and `build_engine` creates its folder): a
    registry opened to use an existing database checks first, so that a read, or a
    mistyped path, creates nothing.
    """
    path = sqlite_path(parse_database_url(settings.database_url))
    return path if path is not None and not path.exists() else None


def build_engine(settings: Settings) -> AsyncEngine:
    """The database engine for `settings.database_url`, with timeouts applied."""
    url = parse_database_url(settings.database_url)
    path = sqlite_path(url)
    if path is not None:
        # The embedded default lives in ./.skillreg/; create its directory on first use.
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    return create_engine(
        settings.database_url,
        lock_timeout=settings.lock_timeout,
        statement_timeout=settings.statement_timeout,
        sqlite_busy_timeout=settings.sqlite_busy_timeout,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_timeout=settings.db_pool_timeout,
    )


def build_blobstore(settings: Settings) -> BlobStore:
    """The blob store for `settings.blob_url`."""
    return open_blobstore(
        settings.blob_url,
        max_concurrency=settings.s3_max_concurrency,
        retry_attempts=settings.retry_attempts,
        connect_timeout=settings.s3_connect_timeout,
        read_timeout=settings.s3_read_timeout,
    )
