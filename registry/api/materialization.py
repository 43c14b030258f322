"""Materialisation on the face of `Registry`: reconcile, targets, lock files, status.

A mixin of `Registry` (registry/api/registry.py), kept in its own module so the face stays a
readable table of contents; every method delegates to `registry.services.materialize` or
`registry.services.ops`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from registry import lazy
from registry.domain.model import Scope

if TYPE_CHECKING:
    from registry.services.context import Context
    from registry.services.materialize import forget, lockfile, reconcile
    from registry.services.materialize.forget import ForgetReport
    from registry.services.materialize.lockfile import LockFile
    from registry.services.materialize.report import ReconcileReport
    from registry.services.ops import revoked, status
    from registry.services.ops.revoked import RevokedVersion
    from registry.services.ops.status import Status
else:  # imported when first used (registry/lazy.py)
    forget = lazy.module("registry.services.materialize.forget")
    lockfile = lazy.module("registry.services.materialize.lockfile")
    reconcile = lazy.module("registry.services.materialize.reconcile")
    revoked = lazy.module("registry.services.ops.revoked")
    status = lazy.module("registry.services.ops.status")


class Materialisation:
    """Targets kept equal to the desired state, and what the registry knows of them."""

    ctx: Context

    async def reconcile(
        self,
        scope: Scope,
        target: Path | str,
        *,
        mode: str | None = None,
        adopt: bool = False,
        verify: bool = False,
        lock: LockFile | None = None,
        wait: bool = False,
        actor: str = "reconciler",
        create: bool = False,
    ) -> ReconcileReport:
        """Make the directory `target` hold the desired state of `scope`, and repair drift.

        Every skill of the scope in use (or, with `lock`, exactly the pinned versions) is
        written package-atomically to `target/<slug>`; skills deleted or paused are removed.
        On-disk edits are restored from the blob store, or with `adopt=True` published as
        a new version (origin `out_of_band`, compare-and-swap on the applied version).
        `mode` is `link` (default: each skill a link swapped atomically) or `copy` (real
        folders, `SKILL.md` written last), fixed when the target is first used. `verify`
        rehashes every file instead of trusting the stat cache. A second reconciler on the
        same target raises `TargetBusy` unless `wait=True`. A scope with no skill, no
        history and no target raises `ScopeNotFound` unless `create=True`: binding a
        target to a misspelt scope is the mistake this catches (`forget_target` undoes one).
        """
        return await reconcile.reconcile(
            self.ctx,
            scope,
            target,
            mode=mode,
            adopt=adopt,
            verify=verify,
            lock=lock,
            wait=wait,
            actor=actor,
            create=create,
        )

    async def forget_target(self, target: Path | str, *, wait: bool = False) -> ForgetReport:
        """Unbind the directory `target`: remove what the reconciler put there and its records.

        The skills the reconciler materialised there and its private area (`.skillreg/`,
        which binds the directory to a scope) are removed, and so are the registry's
        records of the target, with one event. Anything else in the directory stays.
        """
        return await forget.forget(self.ctx, target, wait=wait)

    async def lock_file(self, scope: Scope) -> LockFile:
        """The head version and manifest hash of every skill of `scope` in use."""
        return await lockfile.make_lock(self.ctx, scope)

    async def status(self, workspace: str | None = None, agent: str | None = None) -> Status:
        """Targets and pending materialisations, of one workspace (and agent) or of all."""
        return await status.status(self.ctx, workspace, agent)

    async def revoked_status(self, workspace: str | None = None) -> tuple[RevokedVersion, ...]:
        """Each revoked version in force and the targets that still hold it (or converged).

        Of one workspace, or of all; a target silent past a state's validity is `stale`
        (docs/revocation.md).
        """
        return await revoked.revoked_status(self.ctx, workspace)
