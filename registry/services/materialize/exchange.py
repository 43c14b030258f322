"""The engine's values to and from the sync protocol's JSON (`registry.wire`), for both ends.

The registry's API (`reg.targets`) answers a remote reconciler with `DesiredState` built
from its heads and records, and reads `TargetRegistration` and `RecordRequest` into places
and records; the sync client (`registry.client`) does the reverse. One module converts for
both, so the two ends cannot drift apart.
"""

from __future__ import annotations

import json

from registry.domain.manifest import Manifest
from registry.services.materialize.drift import DriftItem
from registry.services.materialize.source import Applied, Change, Head, Place
from registry.wire import (
    DRIFT_BUDGET,
    MAX_DRIFT_IN_EVENT,
    MAX_DRIFT_PATH,
    AppliedRecord,
    AppliedState,
    DesiredFile,
    DesiredSkill,
    RecordRequest,
    TargetPlace,
)


def desired_skill(head: Head) -> DesiredSkill:
    """A head as the desired state lists it; its files when it is in use."""
    files = None
    if head.manifest is not None:
        files = [
            DesiredFile(path=e.path, digest=e.digest, size=e.size, executable=e.executable)
            for e in head.manifest.entries
        ]
    return DesiredSkill(
        slug=head.slug,
        state=head.state,
        use_paused=head.use_paused,
        version=head.version,
        manifest_hash=head.manifest_hash,
        files=files,
    )


def head_of(skill: DesiredSkill, manifest: Manifest | None) -> Head:
    """The head `skill` describes, with `manifest` (built from its files), checked.

    `ValueError` if `manifest` is not there exactly when `files` is, or does not hash to
    the skill's manifest hash.
    """
    if (manifest is None) != (skill.files is None):
        raise ValueError(f"{skill.slug}: a manifest is given exactly when files are")
    if manifest is not None and manifest.hash != skill.manifest_hash:
        msg = f"{skill.slug}: the files do not hash to manifest {skill.manifest_hash[:16]}"
        raise ValueError(msg)
    return Head(
        slug=skill.slug,
        state=skill.state,
        use_paused=skill.use_paused,
        version=skill.version,
        manifest_hash=skill.manifest_hash,
        manifest=manifest,
    )


def target_place(place: Place) -> TargetPlace:
    return TargetPlace.model_validate(
        {"target_id": place.target_id, "path": place.path, "host": place.host, "mode": place.mode}
    )


def place_of(target: TargetPlace) -> Place:
    return Place(target.target_id, target.path, target.host, target.mode)


def applied_values(applied: Applied) -> dict[str, object]:
    """A record's values, as `AppliedState` (and its subclasses) take them."""
    return {
        "manifest_hash": applied.manifest_hash,
        "version": applied.version,
        "outcome": applied.outcome,
        "error": applied.error,
    }


def applied_record(applied: Applied) -> AppliedRecord:
    return AppliedRecord.model_validate({"slug": applied.slug, **applied_values(applied)})


def applied_of(state: AppliedState, slug: str) -> Applied:
    return Applied(slug, state.manifest_hash, state.version, state.outcome, state.error)


def record_request(*, expected: Applied | None, new: Applied, change: Change) -> RecordRequest:
    """The request that records `new` over `expected`, its drift cut to the protocol's bounds.

    Drift paths are cut to `MAX_DRIFT_PATH` characters and items stop at `DRIFT_BUDGET`
    bytes, so the request stays well inside the API's limit for small JSON bodies.
    """
    drift: list[dict[str, str]] = []
    size = 0
    for item in change.drift[:MAX_DRIFT_IN_EVENT]:
        path = item.path[:MAX_DRIFT_PATH]
        size += len(json.dumps(path))
        if size > DRIFT_BUDGET:
            break
        drift.append({"path": path, "kind": item.kind})
    return RecordRequest.model_validate(
        {
            "expected": None if expected is None else applied_values(expected),
            "record": applied_values(new),
            "action": change.action,
            "drift": drift,
            "error_code": change.error_code,
        }
    )


def change_of(request: RecordRequest) -> Change:
    drift = tuple(DriftItem(d.path, d.kind) for d in request.drift)
    return Change(request.action, drift, request.error_code)
