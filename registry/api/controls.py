"""The owner's controls on the face of `Registry`: state, pauses, deletes, approvals, exclusions.

A mixin of `Registry` (registry/api/registry.py), kept in its own module so the face stays a
readable table of contents; every method delegates to `registry.services.history`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from registry import lazy
from registry.domain.approvals import FindingRef
from registry.domain.arguments import check_flag, check_type
from registry.domain.model import Scope
from registry.domain.states import Action

if TYPE_CHECKING:
    from registry.services.context import Context
    from registry.services.history import approvals, controls, exclusions, revocations
    from registry.services.history.approvals import ApprovalResult
    from registry.services.history.controls import SkillStatus
    from registry.services.history.exclusions import ExclusionReport
    from registry.services.history.revocations import Revocation, YankReport
    from registry.services.marketplace import catalog, revoked
else:  # imported when first used (registry/lazy.py)
    approvals = lazy.module("registry.services.history.approvals")
    controls = lazy.module("registry.services.history.controls")
    exclusions = lazy.module("registry.services.history.exclusions")
    revocations = lazy.module("registry.services.history.revocations")
    catalog = lazy.module("registry.services.marketplace.catalog")
    revoked = lazy.module("registry.services.marketplace.revoked")


class OwnerControls:
    """Owner controls, approvals and source exclusion (docs/history.md)."""

    ctx: Context

    async def skill_status(self, scope: Scope, slug: str) -> SkillStatus:
        """The skill's controls and its state (ready, needs_decision, blocked, paused...)."""
        return await controls.status(self.ctx, scope, slug)

    async def pause_learning(
        self, scope: Scope, slug: str, *, actor: str, reason: str = ""
    ) -> SkillStatus:
        """Pause learning: automated writes become proposals. `StateConflict` if paused."""
        return await controls.act(self.ctx, scope, slug, Action.PAUSE, actor=actor, reason=reason)

    async def resume_learning(self, scope: Scope, slug: str, *, actor: str) -> SkillStatus:
        """Resume learning. `StateConflict` unless learning is paused."""
        return await controls.act(self.ctx, scope, slug, Action.RESUME, actor=actor)

    async def stop_using(
        self, scope: Scope, slug: str, *, actor: str, reason: str = ""
    ) -> SkillStatus:
        """Stop using the skill: runtimes do not load it; history is kept."""
        return await controls.act(
            self.ctx, scope, slug, Action.STOP_USING, actor=actor, reason=reason
        )

    async def resume_use(self, scope: Scope, slug: str, *, actor: str) -> SkillStatus:
        """Resume use. Refused unless use is paused, and while the head is blocked."""
        return await controls.act(self.ctx, scope, slug, Action.RESUME_USE, actor=actor)

    async def set_auto_improve(
        self, scope: Scope, slug: str, *, enabled: bool, actor: str
    ) -> SkillStatus:
        """Turn automatic improvements on or off (`StateConflict` if already so).

        `enabled` is a bool: a truthy `"false"` is `ArgumentInvalid`, never "on".
        """
        on = check_flag("enabled", enabled)
        action = Action.AUTO_IMPROVE_ON if on else Action.AUTO_IMPROVE_OFF
        return await controls.act(self.ctx, scope, slug, action, actor=actor)

    async def yank(
        self, scope: Scope, slug: str, version: int, *, kind: str, reason: str, actor: str
    ) -> YankReport:
        """Revoke `version` (docs/revocation.md): it is never served as something to use.

        `kind` is `security`, `broken` or `policy`; `reason` says why. A revoked head moves
        to the newest version still allowed, as a new version (origin `revocation`); if
        none is left, the skill's use stops. Signed, recorded in history, one event.
        """
        report = await revocations.yank(
            self.ctx, scope, slug, version, kind=kind, reason=reason, actor=actor
        )
        if scope != catalog.catalog_scope(self.ctx):
            return report
        # A catalog listing's version: its installed copies move off it (or stop), in
        # every workspace; asked again, it queues nothing new (docs/revocation.md).
        moved = await revoked.move_copies(self.ctx, slug, report.revocation.version, actor=actor)
        return replace(report, copies_updated=len(moved.updates), copies_stopped=len(moved.stopped))

    async def unyank(self, scope: Scope, slug: str, version: int, *, actor: str) -> Revocation:
        """Take back the revocation of `version` (the head does not move back by itself)."""
        return await revocations.unyank(self.ctx, scope, slug, version, actor=actor)

    async def revoked_versions(self, scope: Scope, slug: str) -> dict[int, Revocation]:
        """The revocations in force of `slug`'s versions, by version number."""
        return await revocations.revoked_versions(self.ctx, scope, slug)

    async def delete(
        self, scope: Scope, slug: str, *, actor: str, expected_head: int | None = None
    ) -> SkillStatus:
        """Delete the skill: its versions are kept (listed as archived), the slug is free.

        With `expected_head`, only if the head is still that version (`HeadConflict`).
        """
        return await controls.act(
            self.ctx, scope, slug, Action.DELETE, actor=actor, expected_head=expected_head
        )

    async def control(
        self,
        scope: Scope,
        slug: str,
        action: Action,
        *,
        actor: str,
        reason: str = "",
        expected_head: int | None = None,
    ) -> SkillStatus:
        """Apply any owner control `action` (pause, resume, stop_using, ..., delete).

        With `expected_head`, a compare-and-swap on the head (`HeadConflict`). `action` is
        an `Action`: a plain `str` equal to one would skip the work the service keys on
        the member (a delete's suppression, a resumed use's content check), so it is
        `ArgumentInvalid`.
        """
        check_type("action", action, Action, "an Action")
        return await controls.act(
            self.ctx, scope, slug, action, actor=actor, reason=reason, expected_head=expected_head
        )

    async def approve_findings(
        self,
        scope: Scope,
        slug: str,
        version: int,
        findings: Sequence[FindingRef],
        *,
        actor: str,
    ) -> ApprovalResult:
        """Approve content-check findings of a stored version (exact-match, never values)."""
        return await approvals.approve_findings(
            self.ctx, scope, slug, version, findings, actor=actor
        )

    async def exclude_source(
        self, scope: Scope, source: str, *, actor: str, reason: str = ""
    ) -> ExclusionReport:
        """Exclude `source` from the workspace and repair the heads that depend on it.

        Idempotent: excluding again changes nothing more and finishes an interrupted repair.
        """
        return await exclusions.exclude_source(self.ctx, scope, source, actor=actor, reason=reason)
