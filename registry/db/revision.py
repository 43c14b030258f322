"""Which schema revision the database is at, and the newest one, without Alembic.

Every command checks that the database is at the newest revision before it runs
(`Registry.check_schema`). Alembic's script directory and migration context cost more to
import than `skillreg list` costs otherwise, so the check reads the same two facts itself:
the current revision with one SELECT of Alembic's `alembic_version` table, and the head
from the scripts' `revision` and `down_revision` lines (the one revision no other script
revises; the history is linear). tests/db/test_schema.py compares both with Alembic's.
Migrating (`registry/db/migrate.py`) still goes through Alembic.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from registry.db import errors as db_errors

_ASSIGNMENT: Final = re.compile(
    r"^(revision|down_revision)\s*(?::[^=]*)?=\s*(?:['\"]([^'\"]+)['\"]|None)\s*$", re.MULTILINE
)
_VERSIONS: Final = sa.table("alembic_version", sa.column("version_num"))


def migrations_dir() -> Path:
    """Where the migration scripts live: inside the installed package, or the source tree.

    A wheel ships the repository's top-level `migrations/` folder as `registry/_migrations`
    (pyproject.toml maps it). The installed copy is looked for first: beside an installed
    package, `../../migrations` is site-packages' own `migrations` folder, which another
    distribution could provide. An editable install or a checkout has only the source tree.
    """
    packaged = Path(str(resources.files("registry") / "_migrations"))
    if (packaged / "env.py").is_file():
        return packaged
    source_tree = Path(__file__).resolve().parents[2] / "migrations"
    if (source_tree / "env.py").is_file():
        return source_tree
    msg = f"migration scripts not found (looked in {packaged} and {source_tree})"
    raise FileNotFoundError(msg)


@asynccontextmanager
async def translated(engine: AsyncEngine) -> AsyncIterator[None]:
    """A database that cannot be reached is `StorageUnavailable`, naming it (password hidden)."""
    try:
        yield
    except db_errors.DATABASE_ERRORS as exc:
        database = engine.url.render_as_string(hide_password=True)
        raise db_errors.translate(exc, database=database) from exc


def head_revision() -> str:
    """The newest revision of the migration scripts this registry ships."""
    return head(migrations_dir())


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    async with translated(engine), engine.connect() as connection:
        return await current(connection)


def head(scripts: Path) -> str:
    """The newest revision among the migration scripts in `scripts` (its `versions/`)."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for script in (scripts / "versions").glob("*.py"):
        found = {m.group(1): m.group(2) for m in _ASSIGNMENT.finditer(script.read_text("utf-8"))}
        if found.get("revision"):
            revisions.add(found["revision"])
        if found.get("down_revision"):
            revised.add(found["down_revision"])
    heads = revisions - revised
    if len(heads) != 1:
        msg = f"expected one head revision in {scripts}, found {sorted(heads)}"
        raise LookupError(msg)
    return heads.pop()


async def current(connection: AsyncConnection) -> str | None:
    """The revision the database is at, or None before the first migration."""

    def has_versions(sync: sa.Connection) -> bool:
        return sa.inspect(sync).has_table("alembic_version")

    if not await connection.run_sync(has_versions):
        return None
    return await connection.scalar(sa.select(_VERSIONS.c.version_num))
