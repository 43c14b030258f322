"""After a write's transaction: settle a commit whose reply was lost, release claims.

A failure before the commit leaves the previous package as it was: the write's claims are
released (`release`), never a blob deleted. A failure at or after the commit has an unknown
outcome: `settle` finds what it committed, under the workspace lock (docs/write-path.md).
"""

from __future__ import annotations

import contextlib

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import blobs as db_blobs
from registry.db import pending as db_pending
from registry.db import proposals as db_proposals
from registry.db import skills as db_skills
from registry.db.budget import outside_write
from registry.domain.model import Publication
from registry.errors import RegistryError, StorageUnavailable
from registry.services.context import Context
from registry.services.write.request import WriteRequest


class CommitFailed(Exception):
    """Settlement found that the write whose commit reply was lost did not commit."""

    def __init__(self, write_id: str) -> None:
        self.write_id = write_id
        super().__init__(f"write {write_id} did not commit")


async def settle(ctx: Context, request: WriteRequest, write_id: str) -> Publication:
    """A commit whose reply was lost: find what it committed, under the workspace lock.

    The lock is the proof that the answer is final: the transaction that sent the commit
    holds it until it has committed or rolled back (on PostgreSQL, a commit still finishing
    on the server, for example waiting for a synchronous standby, keeps it), so a lookup that
    holds the lock cannot run before the outcome exists. If nothing was committed, the claims
    are released in the same transaction. If the lock cannot be had, the outcome stays
    unknown and the write is reported as such: retrying the same write is safe, because a
    write that finds its own package at the head succeeds unchanged.
    """
    workspace = request.scope.workspace

    async def find(conn: AsyncConnection) -> Publication | None:
        await ctx.hit("cleanup.settling")
        created = await db_skills.version_by_write(conn, workspace, write_id)
        if created is not None:
            return Publication(
                version=created.number,
                manifest_hash=created.manifest_hash,
                created=True,
                retired=created.parent,
                unchanged=False,
                committed_at=created.created_at,
            )
        proposed = await db_proposals.by_write(conn, workspace, write_id)
        if proposed is None:
            waiting = await db_pending.by_write(conn, workspace, write_id)
            if waiting is not None:
                return Publication(
                    version=0,
                    manifest_hash=waiting.manifest_hash,
                    created=False,
                    retired=None,
                    unchanged=False,
                    committed_at=waiting.created_at,
                    pending=waiting.id,
                )
            await db_blobs.release(conn, write_id, ctx.clock.now())
            return None
        skill = await db_skills.skill_by_id(conn, workspace, proposed.skill_id)
        assert skill is not None
        return Publication(
            version=skill.head,
            manifest_hash=proposed.manifest_hash,
            created=False,
            retired=None,
            unchanged=False,
            committed_at=proposed.created_at,
            proposal=proposed.id,
            proposal_kind=proposed.kind,
        )

    with outside_write():
        try:
            found = await ctx.locked(workspace, find)
        except RegistryError as exc:
            raise StorageUnavailable(
                "database",
                f"the outcome of the commit is unknown ({exc}); retrying the same write is "
                "safe: if it committed, the retry finds its package at the head",
            ) from exc
    if found is None:
        raise CommitFailed(write_id)
    return found


async def release(ctx: Context, workspace: str, write_id: str) -> None:
    """After a failure before the commit: drop the write's claims (never deletes a blob).

    Runs with a lock wait of its own, not what is left of the write's. If the database is
    unreachable the claims expire after `claim_ttl`, and GC reclaims the blobs after its
    grace period (invariant I4).
    """
    await ctx.hit("cleanup.releasing")
    with outside_write(), contextlib.suppress(RegistryError):
        await ctx.write(
            lambda conn: db_blobs.release(conn, write_id, ctx.clock.now()), workspace=workspace
        )
