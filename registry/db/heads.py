"""The compare-and-swap on a skill's head (invariant I5), written once.

`compare(expected, current)` is the rule: a write that names a head must find that head,
or it fails with `HeadConflict(expected, current)`. The root checks apply it to the skill
row in hand: before any upload, and under the workspace lock, where it decides
(`services/write/rootchecks.py`). `swap` moves the head in SQL the same way, `UPDATE
skills SET head = :new ... WHERE id = :id AND head = :expected`, and a swap that updates
no row is reported by `compare` with the head the row has now. Under the workspace lock
that cannot happen (the head was read under the same lock); the `WHERE` keeps the swap
honest for any writer that skipped the lock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.skills import SkillRow
from registry.db.tables import Skill
from registry.errors import HeadConflict

_SWAP: Final = sa.update(Skill).where(
    Skill.id == sa.bindparam("skill_id"),
    Skill.workspace == sa.bindparam("skill_workspace"),
    Skill.head == sa.bindparam("expected_head"),
)
_CURRENT: Final = sa.select(Skill.head).where(
    Skill.id == sa.bindparam("skill_id"), Skill.workspace == sa.bindparam("workspace")
)


def compare(expected: int, current: int | None) -> None:
    """Raise `HeadConflict(expected, current)` unless the head `current` is `expected`.

    `current` is None when the skill is gone (deleted, or another workspace's).
    """
    if current != expected:
        raise HeadConflict(expected, current)


async def swap(
    conn: AsyncConnection,
    skill: SkillRow,
    *,
    new_head: int,
    size: int,
    now: datetime,
    auto_improve: bool | None = None,
    baseline: tuple[str, int, str] | None = None,
    revive: bool = False,
) -> None:
    """Move the head from `skill.head` (as read under the lock) to `new_head`.

    `size` is the new head package's bytes (the quota counter follows it, by trigger);
    `auto_improve` (unless None) and `baseline` (unless None) change with the head.
    `revive` makes a deleted skill live again with it (its counters follow, by trigger).
    """
    values: dict[str, Any] = {
        "skill_id": skill.id,
        "skill_workspace": skill.workspace,
        "expected_head": skill.head,
        "head": new_head,
        "head_size": size,
        "updated_at": now,
    }
    if revive:
        values["state"], values["deleted_at"] = "active", None
    if auto_improve is not None:
        values["auto_improve"] = auto_improve
    if baseline is not None:
        values["baseline_listing"], values["baseline_version"] = baseline[0], baseline[1]
        values["baseline_manifest_hash"] = baseline[2]
    result = await conn.execute(_SWAP, values)
    if result.rowcount != 1:
        compare(skill.head, await current(conn, skill))
        # The row has the expected head now, yet the swap missed it: nothing but a row
        # that changed between the two statements of this transaction could do that.
        raise HeadConflict(skill.head, skill.head)


async def current(conn: AsyncConnection, skill: SkillRow) -> int | None:
    """The head `skill`'s row has now, or None if the row is gone."""
    head = await conn.scalar(_CURRENT, {"skill_id": skill.id, "workspace": skill.workspace})
    return None if head is None else int(head)
