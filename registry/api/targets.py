"""`reg.targets`: what the HTTP API serves remote reconcilers (`skillreg sync`).

A remote reconciler asks for a scope's desired state (with its target's registration and
records, under one entity tag), registers its target, and records what it applied, each
skill's record a compare-and-swap. `Registry.reconcile` does the same through the database;
the records land in the same tables, so `skillreg status` shows both kinds of target.

Every method takes and returns the protocol's own JSON models (`registry.wire`), so the
HTTP routes only move them between the network and this namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from registry.domain.model import Scope
from registry.services.context import Context
from registry.services.materialize import applied, desired
from registry.services.materialize import signed as signed_state
from registry.services.materialize.exchange import (
    applied_of,
    applied_record,
    change_of,
    desired_skill,
    target_place,
)
from registry.services.materialize.source import Place
from registry.wire import (
    DesiredState,
    RecordRequest,
    RecordResult,
    TargetRegistered,
    TargetRegistration,
    TrustReport,
)


def _never(_: str) -> bool:
    return False


@dataclass(frozen=True)
class ServedState:
    """A scope's desired state and its entity tag; `state` is None when the caller had it."""

    tag: str
    state: DesiredState | None


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
        signed: bool = False,
    ) -> ServedState:
        """The desired state of `scope` (heads; manifests of those in use) and its tag.

        With `target_id`, also that target's registration and records. If `matches(tag)`
        (the caller has this representation already), nothing else is read and `state`
        is None.
        """
        now = self.ctx.clock.now()
        at_epoch = signed_state.epoch(self.ctx, now) if signed else None
        served = await desired.serve(self.ctx, scope, target_id, matches, epoch=at_epoch)
        if target_id is not None and served.target_known:
            await desired.seen(self.ctx, scope.workspace, target_id, served.seen_at)
        if served.unchanged:
            return ServedState(served.tag, None)
        state = DesiredState(
            workspace=scope.workspace,
            agent=scope.agent,
            etag=served.tag,
            skills=[desired_skill(h) for h in served.heads],
            target=None if served.place is None else target_place(served.place),
            applied=[applied_record(a) for a in served.applied],
            signed=None
            if at_epoch is None
            else signed_state.sign(self.ctx, served, now, at_epoch).decode(),
        )
        return ServedState(served.tag, state)

    async def register(
        self, workspace: str, target_id: str, registration: TargetRegistration
    ) -> TargetRegistered:
        """Bind the target to its scope, or record where it is now (`changed` if that did).

        `TargetMismatch` if it is bound to another agent; `StateConflict` if its id is
        taken in another workspace.
        """
        scope = Scope(workspace, registration.agent)
        place = Place(target_id, registration.path, registration.host, registration.mode)
        changed = await applied.register(self.ctx, scope, place)
        return TargetRegistered(agent=scope.agent, target=target_place(place), changed=changed)

    async def record(
        self, workspace: str, target_id: str, slug: str, request: RecordRequest
    ) -> RecordResult:
        """Record `request.record` for `slug` of the target if its record is `expected`.

        `changed` if it did (one outbox event); false if it already said so.
        `TargetNotFound` if the target is not registered in `workspace`; `StateConflict` if
        the record moved.
        """
        new = applied_of(request.record, slug)
        expected = None if request.expected is None else applied_of(request.expected, slug)
        changed = await applied.record_remote(
            self.ctx,
            workspace,
            target_id,
            slug,
            expected=expected,
            new=new,
            change=change_of(request),
            trust=None if request.trust is None else _said(request.trust),
        )
        tag = None
        if request.state_tag is not None:
            at_epoch = signed_state.epoch(self.ctx, self.ctx.clock.now())
            tag = await desired.retag(
                self.ctx,
                workspace,
                target_id,
                request.state_tag,
                before=expected,
                after=new,
                epoch=at_epoch,
            )
        return RecordResult(record=applied_record(new), changed=changed, state_tag=tag)

    async def report_trust(self, workspace: str, target_id: str, report: TrustReport) -> None:
        """Keep what the target's host says of its desired state, for `status`.

        `TargetNotFound` if the target is not registered in `workspace`.
        """
        await applied.report_trust(self.ctx, workspace, target_id, _said(report))


def _said(report: TrustReport) -> applied.TrustSaid:
    return applied.TrustSaid(report.state, report.since, report.detail, report.seq)
