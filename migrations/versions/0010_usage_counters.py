"""usage counters: live skills per scope and budget, live bytes per workspace

The capacity and quota checks run under the workspace lock. They counted the scope's
skills and summed the head sizes of every skill of the workspace, so a write's lock hold
grew with the workspace: in a workspace of 10,000 skills, a new skill's write context
took 12.7 ms on SQLite and 8.8 ms on PostgreSQL instead of 0.7 and 0.9 ms. Two tables now
hold those figures, `scope_counts` (workspace, agent, kind → live skills) and
`workspace_usage` (workspace → live bytes), and triggers on `skills` keep them in the
transaction that changes a skill, whatever code changes it: a row inserted or deleted,
or a change of its workspace, agent, kind, state or head size. A skill counts while its
state is not `deleted`.

- SQLite: four triggers of upserts: insert, delete, an update that moves a skill between
  counts (scope, budget, liveness), and an update of a counted skill's head size.
- PostgreSQL: one PL/pgSQL function, `skills_usage_counters()`, called by an insert or
  delete trigger and by an update trigger whose `WHEN` skips updates that change none of
  the counted columns (a baseline's move, a control flag). An update that keeps the
  skill's scope, budget and liveness changes one row: the workspace's bytes by the
  difference.

Existing databases are counted once here, from `skills`. Neither the triggers nor the
function are part of the SQLAlchemy model; `alembic check` does not compare them.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 10:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COUNTED: Final = "workspace, agent, kind, state, head_size"
_SQLITE_TRIGGERS: Final = (
    "skills_usage_ai",
    "skills_usage_ad",
    "skills_usage_au",
    "skills_usage_au_size",
)


# The same scope and budget, and the same liveness.
_SAME_PLACE: Final = (
    "OLD.workspace = NEW.workspace AND OLD.agent = NEW.agent AND OLD.kind = NEW.kind "
    "AND (OLD.state = 'deleted') = (NEW.state = 'deleted')"
)


def _sqlite_add(row: str, sign: str) -> str:
    # One statement per counter; `row` is NEW or OLD, `sign` + or -. The SELECT's WHERE
    # both skips a deleted skill and resolves SQLite's upsert-after-SELECT ambiguity.
    return (
        "INSERT INTO scope_counts (workspace, agent, kind, live_skills) "  # noqa: S608 - constants
        f"SELECT {row}.workspace, {row}.agent, {row}.kind, {sign}1 "
        f"WHERE {row}.state <> 'deleted' "
        "ON CONFLICT (workspace, agent, kind) "
        "DO UPDATE SET live_skills = live_skills + excluded.live_skills; "
        "INSERT INTO workspace_usage (workspace, live_bytes) "
        f"SELECT {row}.workspace, {sign}{row}.head_size "
        f"WHERE {row}.state <> 'deleted' "
        "ON CONFLICT (workspace) DO UPDATE SET live_bytes = live_bytes + excluded.live_bytes;"
    )


def _sqlite_triggers() -> None:
    op.execute(
        f"CREATE TRIGGER skills_usage_ai AFTER INSERT ON skills BEGIN {_sqlite_add('NEW', '+')} END"
    )
    op.execute(
        f"CREATE TRIGGER skills_usage_ad AFTER DELETE ON skills BEGIN {_sqlite_add('OLD', '-')} END"
    )
    # A skill that changes scope, budget or liveness leaves its old counts and joins its
    # new ones; one that keeps them (a head that moved) changes its workspace's bytes only.
    op.execute(
        f"CREATE TRIGGER skills_usage_au AFTER UPDATE OF {_COUNTED} ON skills "
        f"WHEN NOT ({_SAME_PLACE}) "
        f"BEGIN {_sqlite_add('OLD', '-')} {_sqlite_add('NEW', '+')} END"
    )
    op.execute(
        "CREATE TRIGGER skills_usage_au_size AFTER UPDATE OF head_size ON skills "  # noqa: S608
        f"WHEN {_SAME_PLACE} AND NEW.state <> 'deleted' AND OLD.head_size <> NEW.head_size "
        "BEGIN INSERT INTO workspace_usage (workspace, live_bytes) "
        "SELECT NEW.workspace, NEW.head_size - OLD.head_size WHERE 1 "
        "ON CONFLICT (workspace) DO UPDATE SET live_bytes = live_bytes + excluded.live_bytes; "
        "END"
    )


_PG_FUNCTION: Final = """
CREATE FUNCTION skills_usage_counters() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was_live boolean := TG_OP <> 'INSERT' AND OLD.state <> 'deleted';
    is_live boolean := TG_OP <> 'DELETE' AND NEW.state <> 'deleted';
BEGIN
    IF was_live AND is_live AND OLD.workspace = NEW.workspace AND OLD.agent = NEW.agent
            AND OLD.kind = NEW.kind THEN
        -- Same scope, budget and liveness (a head that moved): only the bytes change.
        IF NEW.head_size <> OLD.head_size THEN
            UPDATE workspace_usage SET live_bytes = live_bytes + (NEW.head_size - OLD.head_size)
            WHERE workspace = NEW.workspace;
            IF NOT FOUND THEN
                INSERT INTO workspace_usage AS u (workspace, live_bytes)
                VALUES (NEW.workspace, NEW.head_size - OLD.head_size)
                ON CONFLICT (workspace)
                DO UPDATE SET live_bytes = u.live_bytes + EXCLUDED.live_bytes;
            END IF;
        END IF;
        RETURN NULL;
    END IF;
    IF was_live THEN
        INSERT INTO scope_counts AS c (workspace, agent, kind, live_skills)
        VALUES (OLD.workspace, OLD.agent, OLD.kind, -1)
        ON CONFLICT (workspace, agent, kind)
        DO UPDATE SET live_skills = c.live_skills + EXCLUDED.live_skills;
        INSERT INTO workspace_usage AS u (workspace, live_bytes)
        VALUES (OLD.workspace, -OLD.head_size)
        ON CONFLICT (workspace) DO UPDATE SET live_bytes = u.live_bytes + EXCLUDED.live_bytes;
    END IF;
    IF is_live THEN
        INSERT INTO scope_counts AS c (workspace, agent, kind, live_skills)
        VALUES (NEW.workspace, NEW.agent, NEW.kind, 1)
        ON CONFLICT (workspace, agent, kind)
        DO UPDATE SET live_skills = c.live_skills + EXCLUDED.live_skills;
        INSERT INTO workspace_usage AS u (workspace, live_bytes)
        VALUES (NEW.workspace, NEW.head_size)
        ON CONFLICT (workspace) DO UPDATE SET live_bytes = u.live_bytes + EXCLUDED.live_bytes;
    END IF;
    RETURN NULL;
END
$$
"""


def _postgresql_triggers() -> None:
    op.execute(_PG_FUNCTION)
    op.execute(
        "CREATE TRIGGER skills_usage_insert_delete AFTER INSERT OR DELETE ON skills "
        "FOR EACH ROW EXECUTE FUNCTION skills_usage_counters()"
    )
    op.execute(
        f"CREATE TRIGGER skills_usage_update AFTER UPDATE OF {_COUNTED} ON skills "
        "FOR EACH ROW WHEN (OLD.workspace IS DISTINCT FROM NEW.workspace "
        "OR OLD.agent IS DISTINCT FROM NEW.agent OR OLD.kind IS DISTINCT FROM NEW.kind "
        "OR OLD.state IS DISTINCT FROM NEW.state "
        "OR OLD.head_size IS DISTINCT FROM NEW.head_size) "
        "EXECUTE FUNCTION skills_usage_counters()"
    )


def upgrade() -> None:
    op.create_table(
        "scope_counts",
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("live_skills", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace", "agent", "kind", name=op.f("pk_scope_counts")),
    )
    op.create_table(
        "workspace_usage",
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("live_bytes", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace", name=op.f("pk_workspace_usage")),
    )
    op.execute(
        "INSERT INTO scope_counts (workspace, agent, kind, live_skills) "
        "SELECT workspace, agent, kind, count(*) FROM skills WHERE state <> 'deleted' "
        "GROUP BY workspace, agent, kind"
    )
    op.execute(
        "INSERT INTO workspace_usage (workspace, live_bytes) "
        "SELECT workspace, sum(head_size) FROM skills WHERE state <> 'deleted' "
        "GROUP BY workspace"
    )
    if op.get_context().dialect.name == "postgresql":
        _postgresql_triggers()
    else:
        _sqlite_triggers()


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP TRIGGER skills_usage_update ON skills")
        op.execute("DROP TRIGGER skills_usage_insert_delete ON skills")
        op.execute("DROP FUNCTION skills_usage_counters()")
    else:
        for trigger in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER {trigger}")
    op.drop_table("workspace_usage")
    op.drop_table("scope_counts")
