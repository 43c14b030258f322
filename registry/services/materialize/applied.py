"""The applied state of a target: what the registry records it holds, and the outbox events.

Every change (a target registered or moved, a skill applied, removed or failed) is one
transaction under the workspace's advisory lock: a compare-and-swap on the record the
reconciler read, and one outbox event. A transaction retried after a lost commit finds its
own values already there and changes nothing (no second event).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import materializations as db_materializations
from registry.db import skills as db_skills
from registry.domain.model import Scope
from registry.errors import RegistryError
from registry.services.context import Context
from registry.services.materialize.drift import DriftItem
from registry.services.materialize.target import Target

EVENT_KINDS: Final = {
    "applied": "materialized",
    "removed": "dematerialized",
    "failed": "materialize_failed",
}
TARGET_REGISTERED: Final = "materialize_target_registered"
_MAX_DRIFT_IN_EVENT: Final = 100


class Records:
    """The records of one target, as read at the start of a reconcile and kept current."""

    def __init__(self, ctx: Context, scope: Scope, target: Target) -> None:
        self.ctx = ctx
        self.scope = scope
        self.target = target
        self.rows: dict[str, db_materializations.AppliedRow] = {}

    async def load(self) -> dict[str, db_materializations.AppliedRow]:
        """Read what the registry records for every slug of the target."""

        async def work(conn: AsyncConnection) -> list[db_materializations.AppliedRow]:
            return await db_materializations.applied(conn, self.scope, [self.target.target_id])

        self.rows = {r.slug: r for r in await self.ctx.read(work)}
        return self.rows

    def where(self) -> dict[str, Any]:
        """Where the target is, for event payloads."""
        return {
            "target_id": self.target.target_id,
            "target": str(self.target.path),
            "host": self.target.host,
            "mode": self.target.mode,
        }

    async def register(self) -> None:
        """Record the target once, and again when it is found at another path or host."""
        now = self.ctx.clock.now()
        row = db_materializations.TargetRow(
            target_id=self.target.target_id,
            workspace=self.scope.workspace,
            agent=self.scope.agent,
            path=str(self.target.path),
            host=self.target.host,
            mode=self.target.mode,
            created_at=now,
            updated_at=now,
        )

        async def current(conn: AsyncConnection) -> db_materializations.TargetRow | None:
            return await db_materializations.target(
                conn, self.scope.workspace, self.target.target_id
            )

        existing = await self.ctx.read(current)
        if existing is not None and (existing.path, existing.host, existing.mode) == (
            row.path,
            row.host,
            row.mode,
        ):
            return

        async def work(conn: AsyncConnection) -> None:
            if await db_materializations.save_target(conn, row):
                await db_skills.insert_event(
                    conn,
                    self.scope,
                    "",
                    skill_id=None,
                    kind=TARGET_REGISTERED,
                    version=None,
                    manifest_hash=None,
                    payload=self.where(),
                    now=now,
                )

        await self.ctx.locked(self.scope.workspace, work)

    async def applied(
        self,
        slug: str,
        skill_id: int | None,
        *,
        manifest_hash: str,
        version: int,
        action: str,
        found: Sequence[DriftItem],
    ) -> None:
        """Record that the target holds `manifest_hash` (version `version`) for `slug`."""
        drift = [{"path": d.path, "kind": d.kind} for d in found[:_MAX_DRIFT_IN_EVENT]]
        await self._save(
            slug,
            skill_id,
            manifest_hash=manifest_hash,
            version=version,
            outcome="applied",
            error=None,
            payload={"action": action, "drift": drift},
        )

    async def removed(self, slug: str, skill_id: int | None) -> None:
        """Record that `slug` is no longer on the target."""
        await self._save(
            slug,
            skill_id,
            manifest_hash=None,
            version=None,
            outcome="removed",
            error=None,
            payload={"action": "removed"},
        )

    async def failed(self, slug: str, skill_id: int | None, error: RegistryError) -> None:
        """Record a failure (best effort: it is reported either way; the record feeds status).

        The recorded hash stays what is on disk: a failed write changed nothing there.
        """
        row = self.rows.get(slug)
        try:
            await self._save(
                slug,
                skill_id,
                manifest_hash=None if row is None else row.manifest_hash,
                version=None if row is None else row.version,
                outcome="failed",
                error=f"{error.code}: {error}",
                payload={"action": "failed", "error": error.code},
            )
        except RegistryError:
            return

    async def _save(
        self,
        slug: str,
        skill_id: int | None,
        *,
        manifest_hash: str | None,
        version: int | None,
        outcome: str,
        error: str | None,
        payload: dict[str, Any],
    ) -> None:
        expected = self.rows.get(slug)
        if expected is not None and (
            expected.manifest_hash,
            expected.version,
            expected.outcome,
            expected.error,
        ) == (manifest_hash, version, outcome, error):
            return
        now = self.ctx.clock.now()

        async def work(conn: AsyncConnection) -> None:
            changed = await db_materializations.record(
                conn,
                self.scope,
                self.target.target_id,
                slug,
                expected=expected,
                manifest_hash=manifest_hash,
                version=version,
                outcome=outcome,
                error=error,
                now=now,
            )
            if changed:
                await db_skills.insert_event(
                    conn,
                    self.scope,
                    slug,
                    skill_id=skill_id,
                    kind=EVENT_KINDS[outcome],
                    version=version,
                    manifest_hash=manifest_hash,
                    payload={**self.where(), **payload},
                    now=now,
                )

        await self.ctx.locked(self.scope.workspace, work)
        self.rows[slug] = db_materializations.AppliedRow(
            self.target.target_id, slug, manifest_hash, version, outcome, error, now
        )
