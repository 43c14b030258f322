"""Helpers for the history suites: outbox events, fake secrets, small packages."""

from __future__ import annotations

import sqlalchemy as sa

from registry.api import Registry
from registry.db.tables import Event
from registry.domain.scanner import DefaultScanner, Finding, value_hash
from tests.corpus.fakes import ALNUM, chars


async def events(registry: Registry) -> list[tuple[str, str, str]]:
    """Every outbox event as (workspace, slug, kind), in order."""
    async with registry.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(Event.workspace, Event.slug, Event.kind).order_by(Event.id)
        )
        return [tuple(r) for r in rows]


async def event_count(registry: Registry) -> int:
    return len(await events(registry))


def github_token(seed: str) -> str:
    """A credential-shaped fake the default scanner blocks (never a real one)."""
    return "gh" + "p_" + chars(ALNUM, 36, seed)


CODENAME = "PROJECT-NIGHTJAR"


class StricterScanner(DefaultScanner):
    """Today's rules: also blocks an internal code name (a different fingerprint)."""

    fingerprint = "stricter-" + DefaultScanner.fingerprint[:40]

    def scan(self, path, data):
        found = super().scan(path, data)
        if CODENAME.encode() in data:
            found.append(Finding(path, "codename", len(found) + 1, 1, value_hash(CODENAME)))
        return found
