"""Registry fixtures: a registry per test, on each database, with an injectable store.

- `make_registry(**overrides)`: build a `Registry` on the test's database (`database_url`,
  parametrized over SQLite and PostgreSQL) and a local blob store under `tmp_path`, or the
  store/settings/clock/failpoints/scanner given. Everything built is closed after the test.
- `registry`: `make_registry()` with defaults.
- `local_store`: the test's local blob store (created).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from blobstore import BlobStore
from blobstore.local import LocalBlobStore
from registry.api import Registry
from registry.db.engine import create_engine
from registry.settings import Settings

MakeRegistry = Callable[..., Awaitable[Registry]]


@pytest.fixture
async def local_store(tmp_path: Path) -> AsyncIterator[LocalBlobStore]:
    store = LocalBlobStore(tmp_path / "blobs")
    await store.ensure()
    yield store
    await store.close()


@pytest.fixture
async def make_registry(
    database_url: str, local_store: LocalBlobStore
) -> AsyncIterator[MakeRegistry]:
    built: list[Registry] = []
    engines = []

    async def make(
        *,
        blobs: BlobStore | None = None,
        settings: Settings | None = None,
        **kwargs: Any,
    ) -> Registry:
        effective = (settings or Settings()).model_copy(
            update={"database_url": database_url, "blob_url": f"file://{local_store.root}"}
        )
        engine = create_engine(
            database_url,
            lock_timeout=effective.lock_timeout,
            statement_timeout=effective.statement_timeout,
            sqlite_busy_timeout=effective.sqlite_busy_timeout,
            pool_size=effective.db_pool_size,
            max_overflow=effective.db_max_overflow,
            pool_timeout=effective.db_pool_timeout,
        )
        engines.append(engine)
        registry = Registry(engine, blobs or local_store, effective, **kwargs)
        built.append(registry)
        return registry

    yield make
    # close() waits for the cleanups a failed or cancelled write started (they hold a
    # connection); disposing of the engine first would leave theirs open.
    for registry in built:
        await registry.close()
    for engine in engines:
        await engine.dispose()


@pytest.fixture
async def registry(make_registry: MakeRegistry) -> Registry:
    return await make_registry()
