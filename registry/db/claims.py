"""A write's claim, in one statement on PostgreSQL.

Before it uploads anything, a write claims the digests it is about to store
(`blobs.claim`: the blob rows created `pending` or touched, one claim row each), records
the digests its content check found clean (`scans.remember_clean`) and, when its `SKILL.md`
is among the claimed blobs, that file's triggers (`documents.remember`). Every one of these
is an idempotent upsert, so on PostgreSQL they are one statement of data-modifying CTEs,
and one statement is its own transaction: the claim costs one round trip, with no `BEGIN`
and no `COMMIT` (`UnitOfWork.single`).

- `claimed`: `INSERT INTO blobs SELECT ... FROM unnest(:digests, :sizes) ON CONFLICT DO
  UPDATE ...` (the same upsert as `blobs.claim`: a `deleting` row that is not fenced is
  resurrected to `pending`), `RETURNING digest, status`;
- `claims`: one claim per returned row that is not `deleting` (a fenced row gets none);
- `clean`, `document`: the scan cache and the `SKILL.md` index, `ON CONFLICT DO NOTHING`.

Foreign keys are checked at the end of the statement, so the claims and the index may name
blob rows inserted beside them. SQLite, where a statement costs no round trip, runs the
steps one by one in a write transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import blobs as db_blobs
from registry.db import direct
from registry.db import documents as db_documents
from registry.db import scans as db_scans
from registry.db.tables import Blob, BlobClaim, ScanResult, SkillMdIndex, UtcDateTime

_TEXTS: Final = postgresql.ARRAY(sa.Text)


def _p(name: str, type_: Any) -> sa.BindParameter[Any]:
    return sa.bindparam(f"c_{name}", type_=type_)


def _statement(*, durable: bool) -> sa.Select[Any]:
    now = _p("now", UtcDateTime())
    wanted = (
        sa.func.unnest(_p("digests", _TEXTS), _p("sizes", postgresql.ARRAY(sa.BigInteger)))
        .table_valued("digest", "size")
        .render_derived(name="wanted")
    )
    source: Any = wanted
    if not durable:
        # `set_config(..., is_local => true)` lasts until the statement's own transaction
        # ends, its commit included; joined to every claimed row, so it runs whenever a
        # row is claimed (were it skipped, the commit would only be durable).
        relaxed = sa.select(
            sa.func.set_config(
                sa.literal_column("'synchronous_commit'"), sa.literal_column("'off'"), sa.true()
            ).label("setting")
        ).cte("relaxed")
        source = wanted.join(relaxed, sa.true())
    claimed = (
        db_blobs.on_claim(
            postgresql.insert(Blob).from_select(
                ["digest", "size", "status", "created_at", "touched_at"],
                sa.select(
                    wanted.c.digest, wanted.c.size, sa.literal_column("'pending'"), now, now
                ).select_from(source),
            )
        )
        .returning(Blob.digest, Blob.status)
        .cte("claimed")
    )
    claims = db_blobs.on_reclaim(
        postgresql.insert(BlobClaim).from_select(
            ["write_id", "digest", "workspace", "created_at", "expires_at"],
            sa.select(
                _p("write_id", sa.String),
                claimed.c.digest,
                _p("workspace", sa.String),
                now,
                _p("expires_at", UtcDateTime()),
            ).where(claimed.c.status != "deleting"),
        )
    ).cte("claims")
    scanned = sa.func.unnest(_p("clean", _TEXTS)).table_valued("digest").render_derived("scanned")
    clean = (
        postgresql.insert(ScanResult)
        .from_select(
            ["digest", "scanner", "scanned_at"],
            sa.select(scanned.c.digest, _p("scanner", sa.String), now).select_from(scanned),
        )
        .on_conflict_do_nothing(index_elements=["digest", "scanner"])
        .cte("clean")
    )
    document = (
        postgresql.insert(SkillMdIndex)
        .from_select(
            ["digest", "triggers", "created_at"],
            sa.select(_p("document", sa.String), _p("triggers", sa.JSON), now).where(
                _p("document", sa.String).is_not(None)
            ),
        )
        .on_conflict_do_nothing(index_elements=["digest"])
        .cte("document")
    )
    return (
        sa.select(claimed.c.digest, claimed.c.status)
        .add_cte(claims, nest_here=False)
        .add_cte(clean, nest_here=False)
        .add_cte(document, nest_here=False)
    )


_CLAIM: Final = _statement(durable=True)
_CLAIM_RELAXED: Final = _statement(durable=False)


async def claim(
    conn: AsyncConnection,
    *,
    write_id: str,
    workspace: str,
    sizes: Mapping[str, int],
    now: datetime,
    expires_at: datetime,
    clean: Sequence[str],
    scanner: str,
    document: tuple[str, Sequence[str]] | None,
    durable: bool = True,
) -> dict[str, str]:
    """Claim `sizes`' digests, remember the `clean` ones and the `document`; the statuses.

    Returns each claimed digest's status after the claim, as `blobs.claim` does. The
    `document` (a `SKILL.md` digest and its triggers) is recorded only if it is claimed.
    `durable=False`, for a claim that is its own transaction (`UnitOfWork.single`): on
    PostgreSQL the statement's commit does not wait for the log's flush (SQLite's is
    relaxed by the unit of work). Within a transaction of the caller's it would relax
    that whole transaction's commit, so it is only for a statement run alone.
    """
    if document is not None and document[0] not in sizes:
        document = None
    if conn.dialect.name != "postgresql" or not sizes:
        statuses = await db_blobs.claim(
            conn,
            write_id=write_id,
            workspace=workspace,
            sizes=sizes,
            now=now,
            expires_at=expires_at,
        )
        await db_scans.remember_clean(conn, clean, scanner, now)
        if document is not None:
            await db_documents.remember(conn, document[0], document[1], now)
        return statuses
    ordered = sorted(sizes.items())
    rows = await direct.run(
        conn,
        _CLAIM if durable else _CLAIM_RELAXED,
        {
            "c_digests": [d for d, _ in ordered],
            "c_sizes": [size for _, size in ordered],
            "c_now": now,
            "c_write_id": write_id,
            "c_workspace": workspace,
            "c_expires_at": expires_at,
            "c_clean": sorted(set(clean)),
            "c_scanner": scanner,
            "c_document": None if document is None else document[0],
            "c_triggers": None if document is None else list(document[1]),
        },
    )
    return {row.digest: row.status for row in rows}
