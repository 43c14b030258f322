"""The SKILL.md index: discovery triggers by the file's digest (docs/package-format.md).

Written in a write's claim transaction (not under the workspace lock) when its `SKILL.md`
is new to the skill; read with listings and reads. A digest without a row (a `SKILL.md`
stored before the index existed) reads as unknown, and the caller reads the blob.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Manifest, ManifestEntry, SkillMdIndex
from registry.domain.paths import SKILL_MD


async def remember(
    conn: AsyncConnection, digest: str, triggers: Sequence[str], now: datetime
) -> None:
    """Record the triggers of the `SKILL.md` stored under `digest` (once; idempotent).

    The caller has claimed `digest`, so its blob row exists.
    """
    await conn.execute(
        _REMEMBER[conn.dialect.name],
        {"digest": digest, "triggers": list(triggers), "created_at": now},
    )


# Built once per dialect: the same statement in each one's `ON CONFLICT` construct.
_REMEMBER: Final = {
    name: insert(SkillMdIndex).on_conflict_do_nothing(index_elements=["digest"])
    for name, insert in (("postgresql", postgresql.insert), ("sqlite", sqlite.insert))
}


async def skill_md_of(
    conn: AsyncConnection, workspace: str, manifest_hashes: Iterable[str]
) -> dict[str, tuple[str, list[str] | None]]:
    """Per manifest hash: its `SKILL.md` digest and indexed triggers (None if not indexed)."""
    hashes = sorted(set(manifest_hashes))
    if not hashes:
        return {}
    rows = await conn.execute(
        sa.select(Manifest.hash, ManifestEntry.digest, SkillMdIndex.triggers)
        .join(ManifestEntry, Manifest.id == ManifestEntry.manifest_id)
        .outerjoin(SkillMdIndex, SkillMdIndex.digest == ManifestEntry.digest)
        .where(
            Manifest.workspace == workspace,
            Manifest.hash.in_(hashes),
            ManifestEntry.path == SKILL_MD,
        )
    )
    return {r.hash: (r.digest, None if r.triggers is None else list(r.triggers)) for r in rows}
