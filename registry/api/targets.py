"""`reg.targets`: what the HTTP API serves remote reconcilers (`skillreg sync`).

A remote reconciler asks for a scope's desired state (with its target's registration and
records, under one entity tag), registers its target, and records what it applied, each
skill's record a compare-and-swap. `Registry.reconcile` does the same through the database;
the records land in the same tables, so `skillreg status` shows both kinds of target.
"""

from __future__ import annotations

from collections.abc import Callable

from registry.domain.model import Scope
from registry.services.context import Context
from registry.services.materialize import applied, desired
from registry.services.materialize.desired import Served
from registry.services.materialize.source import Applied, Change, Place


def _never(_: str) -> bool:
    return False


class Targets:
    """Materialisation targets for remote reconcilers: `reg.targets`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def desired(
        self,
        scope: Scope,
        *,
        target_id: str | None = None,
        matches: Callable[[str], bool] = _never,
    ) -> Served:
        """The desired state of `scope` (heads; manifests of those in use) and its tag.

        With `target_id`, also that target's registration and records. If `matches(tag)`
        (the caller has this representation already), nothing else is read:
        `Served.unchanged`.
        """
        return await desired.serve(self.ctx, scope, target_id, matches)

    async def register(self, scope: Scope, place: Place) -> bool:
        """Bind the target to `scope`, or record where it is now; True if that changed.

        `TargetMismatch` if it is bound to another agent; `StateConflict` if its id is
        taken in another workspace.
        """
        return await applied.register(self.ctx, scope, place)

    async def record(
        self,
        workspace: str,
        target_id: str,
        *,
        expected: Applied | None,
        new: Applied,
        change: Change,
    ) -> bool:
        """Record `new` for a skill of the target if its record is still `expected`.

        True if it changed (one outbox event); False if it already said so. `TargetNotFound`
        if the target is not registered in `workspace`; `StateConflict` if the record moved.
        """
        return await applied.record_remote(
            self.ctx, workspace, target_id, new.slug, expected=expected, new=new, change=change
        )
