"""Rows the database tests insert directly, below the write path."""

from __future__ import annotations

from datetime import datetime


def skill_row(
    slug: str, *, now: datetime, workspace: str = "w", **changes: object
) -> dict[str, object]:
    """A `skills` row of a saved, active skill at head 1; `changes` replace its columns."""
    row: dict[str, object] = {
        "workspace": workspace,
        "agent": "personal",
        "slug": slug,
        "kind": "saved",
        "head": 1,
        "head_size": 1,
        "state": "active",
        "auto_improve": True,
        "learning_paused": False,
        "use_paused": False,
        "created_at": now,
        "updated_at": now,
    }
    row.update(changes)
    return row
