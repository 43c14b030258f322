"""The JSON that a remote reconciler and the registry's HTTP API exchange (`skillreg sync`).

Defined once, here, for both ends: the API's routes answer with these models (and the
OpenAPI document describes them), and the remote source validates what it receives with
the same models, so a malformed answer is refused before the reconciler acts on it.

    GET .../desired?agent=&target=     DesiredState (ETag; 304 when If-None-Match holds)
    PUT .../targets/{id}               TargetRegistration -> TargetRegistered
    PUT .../targets/{id}/skills/{slug} RecordRequest -> RecordResult
"""

from __future__ import annotations

import json
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from registry.domain.manifest import Manifest
from registry.domain.numbers import MAX_ID, MAX_VERSION
from registry.services.materialize.drift import DriftItem
from registry.services.materialize.source import (
    MAX_DRIFT_IN_EVENT,
    MAX_ERROR,
    Applied,
    Change,
    Head,
    Place,
)

# A record's request stays well inside the API's 64 KiB limit for small JSON bodies: drift
# paths are cut to `MAX_DRIFT_PATH` characters, and items stop at `DRIFT_BUDGET` bytes.
MAX_DRIFT_PATH: Final = 512
DRIFT_BUDGET: Final = 32 * 1024
HASH_PATTERN: Final = r"^[0-9a-f]{64}$"
TARGET_ID_PATTERN: Final = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_LINE: Final = r"^[^\x00-\x1f\x7f]*$"

Hash = Annotated[str, Field(pattern=HASH_PATTERN)]
Outcome = Literal["applied", "removed", "failed"]
Mode = Literal["link", "copy"]
Action = Literal["written", "unchanged", "repaired", "adopted", "removed", "failed"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DesiredFile(_Wire):
    """One file of a wanted package: its path, blob digest, size and executable bit."""

    path: str = Field(min_length=1, max_length=4096)
    digest: Hash
    size: int = Field(ge=0, le=MAX_ID)
    executable: bool


class DesiredSkill(_Wire):
    """A live skill of the scope and its head; `files` when it is in use (else null)."""

    slug: str = Field(min_length=1, max_length=64)
    state: str
    use_paused: bool
    version: int = Field(ge=1, le=MAX_VERSION)
    manifest_hash: Hash
    files: list[DesiredFile] | None

    @classmethod
    def of(cls, head: Head) -> DesiredSkill:
        files = None
        if head.manifest is not None:
            files = [
                DesiredFile(path=e.path, digest=e.digest, size=e.size, executable=e.executable)
                for e in head.manifest.entries
            ]
        return cls(
            slug=head.slug,
            state=head.state,
            use_paused=head.use_paused,
            version=head.version,
            manifest_hash=head.manifest_hash,
            files=files,
        )

    def head(self, manifest: Manifest | None) -> Head:
        """The head with `manifest` (built from `files`), checked against its hash.

        `ValueError` if `manifest` is not there exactly when `files` is, or does not hash
        to `manifest_hash`.
        """
        if (manifest is None) != (self.files is None):
            raise ValueError(f"{self.slug}: a manifest is given exactly when files are")
        if manifest is not None and manifest.hash != self.manifest_hash:
            msg = f"{self.slug}: the files do not hash to manifest {self.manifest_hash[:16]}"
            raise ValueError(msg)
        return Head(
            slug=self.slug,
            state=self.state,
            use_paused=self.use_paused,
            version=self.version,
            manifest_hash=self.manifest_hash,
            manifest=manifest,
        )


class TargetPlace(_Wire):
    """Where a target is: its id, path and host as last registered, and its mode."""

    target_id: str = Field(pattern=TARGET_ID_PATTERN)
    path: str
    host: str
    mode: Mode

    @classmethod
    def of(cls, place: Place) -> TargetPlace:
        return cls.model_validate(
            {
                "target_id": place.target_id,
                "path": place.path,
                "host": place.host,
                "mode": place.mode,
            }
        )

    def place(self) -> Place:
        return Place(self.target_id, self.path, self.host, self.mode)


class AppliedState(_Wire):
    """A record's values: what the target holds for a skill, the outcome, the last error."""

    manifest_hash: Hash | None
    version: int | None = Field(ge=1, le=MAX_VERSION)
    outcome: Outcome
    error: str | None

    @classmethod
    def of(cls, applied: Applied) -> AppliedState:
        return cls.model_validate(_values(applied))

    def applied(self, slug: str) -> Applied:
        return Applied(slug, self.manifest_hash, self.version, self.outcome, self.error)


def _values(applied: Applied) -> dict[str, object]:
    return {
        "manifest_hash": applied.manifest_hash,
        "version": applied.version,
        "outcome": applied.outcome,
        "error": applied.error,
    }


class NewState(AppliedState):
    """The values a record is to take (an error message at most `MAX_ERROR` characters)."""

    error: str | None = Field(max_length=MAX_ERROR)


class AppliedRecord(AppliedState):
    """What the registry records a target holds for one skill."""

    slug: str = Field(min_length=1, max_length=64)

    @classmethod
    def of(cls, applied: Applied) -> AppliedRecord:
        return cls.model_validate({"slug": applied.slug, **_values(applied)})


class DesiredState(_Wire):
    """A scope's desired state and, with `target`, that target's registration and records."""

    workspace: str
    agent: str
    etag: str
    skills: list[DesiredSkill]
    target: TargetPlace | None
    applied: list[AppliedRecord]


class TargetRegistration(_Wire):
    """`PUT .../targets/{id}`: bind a target to the scope, or say where it is now."""

    agent: str = Field(min_length=1, max_length=128)
    path: str = Field(min_length=1, max_length=4096, pattern=_LINE)
    host: str = Field(max_length=255, pattern=_LINE)
    mode: Mode


class TargetRegistered(_Wire):
    """The target as registered; `changed` is false if it already was."""

    agent: str
    target: TargetPlace
    changed: bool


class DriftEntry(_Wire):
    """One difference the reconciler found on disk (for the event)."""

    path: str = Field(max_length=MAX_DRIFT_PATH)
    kind: str = Field(min_length=1, max_length=32, pattern=r"^[a-z_]+$")


class RecordRequest(_Wire):
    """`PUT .../targets/{id}/skills/{slug}`: a compare-and-swap on the skill's record.

    `expected` is the record as the reconciler read it (null: none); `record` the new
    values; `action`, `drift` and `error_code` go into the outbox event.
    """

    expected: AppliedState | None
    record: NewState
    action: Action
    drift: list[DriftEntry] = Field(default_factory=list, max_length=MAX_DRIFT_IN_EVENT)
    error_code: str | None = Field(default=None, max_length=64, pattern=r"^[a-z_]+$")

    @classmethod
    def of(cls, *, expected: Applied | None, new: Applied, change: Change) -> RecordRequest:
        drift: list[dict[str, str]] = []
        size = 0
        for item in change.drift[:MAX_DRIFT_IN_EVENT]:
            path = item.path[:MAX_DRIFT_PATH]
            size += len(json.dumps(path))
            if size > DRIFT_BUDGET:
                break
            drift.append({"path": path, "kind": item.kind})
        return cls.model_validate(
            {
                "expected": None if expected is None else _values(expected),
                "record": _values(new),
                "action": change.action,
                "drift": drift,
                "error_code": change.error_code,
            }
        )

    @model_validator(mode="after")
    def _consistent(self) -> RecordRequest:
        held = (self.record.manifest_hash is None, self.record.version is None)
        if held[0] != held[1]:
            raise ValueError("a record names both a manifest hash and a version, or neither")
        if self.record.outcome == "applied" and held[0]:
            raise ValueError("an applied record names the manifest hash and version applied")
        if self.record.outcome == "removed" and not held[0]:
            raise ValueError("a removed record names no manifest hash and no version")
        return self

    def change(self) -> Change:
        drift = tuple(DriftItem(d.path, d.kind) for d in self.drift)
        return Change(self.action, drift, self.error_code)


class RecordResult(_Wire):
    """The record as it now is; `changed` is false if it already said so (no event)."""

    record: AppliedRecord
    changed: bool
