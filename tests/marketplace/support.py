"""Shared pieces of the marketplace tests: a manual clock, listings, settings, job lookups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from registry import Registry, Scope
from registry.domain.model import PackageFile
from registry.settings import Settings
from tests.corpus.archives import CORPUS_ARCHIVE_LIMITS
from tests.support.packages import skill_md

LISTING = "pdf-report"


class ManualClock:
    """A clock the test moves: leases and backoff expire when the test says so."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


def listing_files(
    slug: str = LISTING, *, version: int = 1, extra: dict[str, bytes] | None = None
) -> dict[str, bytes | PackageFile]:
    """A listing package whose files change with `version` in a predictable way.

    `SKILL.md` and `references/guide.md` change with every version; `scripts/run.py` and
    `references/notes.md` never do, so an owner may edit those without a conflict.
    """
    files: dict[str, bytes | PackageFile] = {
        "SKILL.md": skill_md(slug, body=f"listing version {version}"),
        "scripts/run.py": PackageFile(b"print('run')\n", executable=True),
        "references/guide.md": f"# Guide, edition {version}\n".encode(),
        "references/notes.md": b"# Notes\n\nupstream notes\n",
    }
    return {**files, **(extra or {})}


def corpus_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "archive_max_entries": CORPUS_ARCHIVE_LIMITS.max_entries,
        "archive_max_bytes": CORPUS_ARCHIVE_LIMITS.max_bytes,
        "archive_max_ratio": CORPUS_ARCHIVE_LIMITS.max_ratio,
    }
    return Settings(**(values | overrides))


async def publish_listing(registry: Registry, version: int = 1, **kwargs: Any):
    return await registry.marketplace.publish_listing(
        kwargs.pop("slug", LISTING),
        listing_files(kwargs.pop("slug_files", LISTING), version=version, **kwargs),
        actor="publisher",
    )


async def job_rows(registry: Registry) -> list[dict[str, Any]]:
    async with registry.engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT * FROM jobs ORDER BY id"))
        return [dict(r._mapping) for r in rows]


async def events(registry: Registry, workspace: str) -> list[tuple[str, str, int | None]]:
    async with registry.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT kind, slug, version FROM events WHERE workspace = :w ORDER BY id"),
            {"w": workspace},
        )
        return [(r.kind, r.slug, r.version) for r in rows]


async def versions(registry: Registry, scope: Scope, slug: str) -> list[tuple[int, str]]:
    async with registry.engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT v.number, v.origin FROM versions v JOIN skills s ON s.id = v.skill_id "
                "WHERE s.workspace = :w AND s.agent = :a AND s.slug = :s ORDER BY v.number"
            ),
            {"w": scope.workspace, "a": scope.agent, "s": slug},
        )
        return [(r.number, r.origin) for r in rows]


async def baseline(registry: Registry, scope: Scope, slug: str) -> tuple[Any, ...]:
    async with registry.engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT kind, baseline_listing, baseline_version, baseline_manifest_hash "
                    "FROM skills WHERE workspace = :w AND agent = :a AND slug = :s "
                    "AND state <> 'deleted'"
                ),
                {"w": scope.workspace, "a": scope.agent, "s": slug},
            )
        ).one()
        return tuple(row)
