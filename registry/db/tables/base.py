"""The declarative base of the relational model: naming, portable types and CHECK builders."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase

# Constraint and index names are derived, so Alembic's autogenerate and `alembic check`
# compare like with like on both dialects.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only aliases the rowid (and so autoincrements) for a column declared exactly
# INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

ORIGINS = (
    "edit",
    "save",
    "learning",
    "restore",
    "import",
    "marketplace_install",
    "marketplace_update",
    "out_of_band",
)
# A version's origin may also be `revocation`: the head moved off a revoked version. Only
# versions take it (a proposal or a pending write is never made by a revocation).
VERSION_ORIGINS = (*ORIGINS, "revocation")
REVOCATION_KINDS = ("security", "broken", "policy")
SKILL_STATES = ("active", "archived", "deleted")
SKILL_KINDS = ("saved", "installed")
BLOB_STATUSES = ("pending", "live", "deleting")


class UtcDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on both dialects.

    SQLite has no timestamp type and hands back naive values; PostgreSQL returns aware
    ones. Values are normalised to aware UTC on the way in and on the way out.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            msg = "naive datetimes are not stored; pass an aware UTC datetime"
            raise ValueError(msg)
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(
        self,
        value: datetime | None,
        dialect: Dialect,  # noqa: ARG002 - the override's signature
    ) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def hex64_check(column: str) -> str:
    """A portable CHECK that `column` is 64 lower-case hex characters.

    PostgreSQL's `~` and SQLite's `GLOB` differ, so the expression strips every hex digit
    with nested `replace()` (which both have) and requires nothing to be left.
    """
    expr = column
    for ch in "0123456789abcdef":
        expr = f"replace({expr}, '{ch}', '')"
    return f"length({column}) = 64 AND {expr} = ''"


def in_check(column: str, values: tuple[str, ...]) -> str:
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UtcDateTime()}
