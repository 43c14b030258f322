"""slug skeleton: one live skill per look-alike slug in a scope

- `skills.slug_skeleton`: the slug's look-alike skeleton (case folding, NFKC, Unicode's
  confusable mapping; registry/domain/skeleton.py), with a unique index over the live
  skills of a scope (`uq_skills_live_skeleton`), so that `λόγοσ` cannot sit beside
  `λόγος`, nor `pdf-report` spelt with a Cyrillic e (U+0435) beside the Latin one.

Existing rows are filled in, oldest skill first. Skills written before this revision may
already look alike: the migration does not fail for them and changes none of them. The
oldest live skill of such a group gets the skeleton; each later one keeps a null skeleton
(a null takes no part in the unique index) and is named in a warning on the `alembic`
logger (`skillreg init` prints it). Such a skill goes on working; a new skill that looks
like the group is refused, because the oldest one holds the skeleton. Deleting the later
ones, or leaving them, is the owner's choice (docs/package-format.md).

The skeleton is computed here as registry/domain/skeleton.py computes it at this
revision, written out: a migration never imports application code, so this history keeps
working whatever the code becomes (tests/domain/test_skeleton.py compares the two).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 21:40:00.000000
"""

from __future__ import annotations

import functools
import logging
import unicodedata
from collections import defaultdict
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from confusable_homoglyphs import confusables

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_log = logging.getLogger("alembic.runtime.migration")
_MARKS = str.maketrans("", "", "\u200e\u200f")
_BATCH = 500


def skeleton(name: str) -> str:
    """The slug skeleton of revision 0012 (see the module docstring)."""
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name.casefold()))
    table = _table()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in folded))


@functools.cache
def _table() -> dict[str, str]:
    links: defaultdict[str, set[str]] = defaultdict(set)
    for key, homoglyphs in confusables.confusables_data.items():
        a = key.translate(_MARKS)
        for glyph in homoglyphs:
            b = glyph["c"].translate(_MARKS)
            if a and b and a != b:
                links[a].add(b)
                links[b].add(a)
    table: dict[str, str] = {}
    placed: set[str] = set()
    for start in links:
        if start in placed:
            continue
        members, todo = [], [start]
        placed.add(start)
        while todo:
            node = todo.pop()
            members.append(node)
            for other in links[node] - placed:
                placed.add(other)
                todo.append(other)
        longer = [m for m in members if len(m) > 1]
        if longer:
            representative = min(longer)
        elif len(members) > 2:  # noqa: PLR2004
            representative = max(members, key=lambda m: len(links[m]))
        else:
            representative = min(members)
        table.update({m: representative for m in members if len(m) == 1 and m != representative})
    return {c: "".join(table.get(p, p) for p in r) for c, r in table.items()}


def upgrade() -> None:
    op.add_column("skills", sa.Column("slug_skeleton", sa.Text(), nullable=True))
    _fill_in()
    op.create_index(
        "uq_skills_live_skeleton",
        "skills",
        ["workspace", "agent", "slug_skeleton"],
        unique=True,
        sqlite_where=sa.text("state <> 'deleted'"),
        postgresql_where=sa.text("state <> 'deleted'"),
    )


def _fill_in() -> None:
    skills = sa.table(
        "skills",
        sa.column("id", sa.BigInteger),
        sa.column("workspace", sa.String),
        sa.column("agent", sa.String),
        sa.column("slug", sa.String),
        sa.column("state", sa.String),
        sa.column("slug_skeleton", sa.Text),
    )
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(
            skills.c.id, skills.c.workspace, skills.c.agent, skills.c.slug, skills.c.state
        ).order_by(skills.c.id)
    ).all()
    holders: dict[tuple[str, str, str], str] = {}
    updates = []
    for skill_id, workspace, agent, slug, state in rows:
        found = skeleton(slug)
        if state != "deleted":
            holder = holders.setdefault((workspace, agent, found), slug)
            if holder != slug:
                _log.warning(
                    "skill %r of %s:%s looks like the older skill %r: its slug skeleton is "
                    "left empty (docs/package-format.md, 'Look-alike slugs')",
                    slug,
                    workspace,
                    agent,
                    holder,
                )
                continue
        updates.append({"skill_id": skill_id, "skeleton": found})
    statement = (
        sa.update(skills)
        .where(skills.c.id == sa.bindparam("skill_id"))
        .values(slug_skeleton=sa.bindparam("skeleton"))
    )
    for start in range(0, len(updates), _BATCH):
        bind.execute(statement, updates[start : start + _BATCH])


def downgrade() -> None:
    op.drop_index("uq_skills_live_skeleton", table_name="skills")
    # Not in batch mode: on SQLite that copies the table, which drops its triggers
    # (0010's usage counters); SQLite drops a column in place since 3.35.
    op.drop_column("skills", "slug_skeleton")
