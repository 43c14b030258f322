"""Database fixtures: every registry-level test runs on SQLite and on PostgreSQL.

`database_url` is parametrized over both. PostgreSQL databases are cloned per test from a
template migrated once per session, one step ahead of the tests (`ClonePool`);
SQLite databases are copies of a migrated template file.

A module whose tests share one server (a process, a browser's site) overrides
`database_url` at module scope with `shared_database(request, folder)`: one fresh
database per module and database kind, under the same parameter name (so the marker
rules of tests/conftest.py apply unchanged).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from registry.db.engine import create_engine
from registry.db.migrate import upgrade
from tests.harness.postgres import ClonePool, PostgresUnavailable, Server, ensure_server


def _migrate(url: str) -> None:
    async def run() -> None:
        engine = create_engine(url)
        try:
            await upgrade(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


@pytest.fixture(scope="session")
def pg_server() -> Server:
    try:
        return ensure_server()
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required on CI and could not start: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")


@pytest.fixture(scope="session")
def pg_template(pg_server: Server) -> Iterator[str]:
    name = f"skillreg_tpl_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(name)
    try:
        _migrate(pg_server.url(name))
        yield name
    finally:
        pg_server.drop_database(name)


@pytest.fixture(scope="session")
def pg_clones(pg_server: Server, pg_template: str) -> Iterator[ClonePool]:
    pool = ClonePool(pg_server, pg_template)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def postgresql_url(pg_server: Server, pg_clones: ClonePool) -> Iterator[str]:
    name = pg_clones.take()
    try:
        yield pg_server.url(name)
    finally:
        pg_clones.give_back(name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    _migrate(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "registry.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


DATABASES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@contextmanager
def shared_database(request: pytest.FixtureRequest, folder: Path) -> Iterator[str]:
    """A fresh, migrated database of the kind `request.param` names, for a module's fixture."""
    if request.param == "sqlite":
        path = folder / "registry.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    server: Server = request.getfixturevalue("pg_server")
    clones: ClonePool = request.getfixturevalue("pg_clones")
    name = clones.take()
    try:
        yield server.url(name)
    finally:
        clones.give_back(name)


@pytest.fixture(params=DATABASES)
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated database: SQLite or PostgreSQL."""
    return str(request.getfixturevalue(f"{request.param}_url"))
