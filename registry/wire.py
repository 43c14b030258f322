"""The JSON that a remote reconciler and the registry's HTTP API exchange (`skillreg sync`).

Defined once, here, for both ends: the API's routes answer with these models (and the
OpenAPI document describes them), and the sync client (`registry.client`) validates what it
receives with the same models, so a malformed answer is refused before the reconciler acts
on it. A neutral module: pydantic models and the protocol's bounds, importing nothing of the
services or the entry points; `services/materialize/exchange.py` converts them to and from
the engine's values for both ends.

    GET .../desired?agent=&target=&signed=true
                                       DesiredState (ETag; 304 when If-None-Match holds),
                                       with `signed` (the signed state) when asked for
    PUT .../targets/{id}               TargetRegistration -> TargetRegistered
    PUT .../targets/{id}/skills/{slug} RecordRequest -> RecordResult
    PUT .../targets/{id}/trust         TrustReport -> TrustReport
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from registry.domain.arguments import LINE_PATTERN, TEXT_PATTERN
from registry.domain.numbers import MAX_ID, MAX_VERSION

# A record's request stays well inside the API's 64 KiB limit for small JSON bodies: drift
# paths are cut to `MAX_DRIFT_PATH` characters, and items stop at `DRIFT_BUDGET` bytes.
MAX_DRIFT_IN_EVENT: Final = 100
MAX_ERROR: Final = 2000  # characters of an error message a record keeps
MAX_DRIFT_PATH: Final = 512
DRIFT_BUDGET: Final = 32 * 1024
HASH_PATTERN: Final = r"^[0-9a-f]{64}$"
TARGET_ID_PATTERN: Final = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

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


class TargetPlace(_Wire):
    """Where a target is: its id, path and host as last registered, and its mode."""

    target_id: str = Field(pattern=TARGET_ID_PATTERN)
    path: str
    host: str
    mode: Mode


class AppliedState(_Wire):
    """A record's values: what the target holds for a skill, the outcome, the last error."""

    manifest_hash: Hash | None
    version: int | None = Field(strict=True, ge=1, le=MAX_VERSION)
    outcome: Outcome
    error: str | None


class NewState(AppliedState):
    """The values a record is to take (an error message at most `MAX_ERROR` characters)."""

    error: str | None = Field(max_length=MAX_ERROR, pattern=TEXT_PATTERN)


class AppliedRecord(AppliedState):
    """What the registry records a target holds for one skill."""

    slug: str = Field(min_length=1, max_length=64)


class DesiredState(_Wire):
    """A scope's desired state and, with `target`, that target's registration and records."""

    workspace: str
    agent: str
    etag: str
    skills: list[DesiredSkill]
    target: TargetPlace | None
    applied: list[AppliedRecord]
    # The signed state (`registry/domain/signed_state.py`), a DSSE envelope as JSON text;
    # sent only to a client that asks (`signed=true`), so older clients see the old shape.
    signed: str | None = None


class TargetRegistration(_Wire):
    """`PUT .../targets/{id}`: bind a target to the scope, or say where it is now."""

    agent: str = Field(min_length=1, max_length=128)
    path: str = Field(min_length=1, max_length=4096, pattern=LINE_PATTERN)
    host: str = Field(max_length=255, pattern=LINE_PATTERN)
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


TrustState = Literal["verified", "stale", "refused"]


class TrustReport(_Wire):
    """`PUT .../targets/{id}/trust`: what a host says of the desired state it was served.

    `verified`: it checked and applied the state of sequence `seq`; `stale`: it holds its
    last good state, expired at `since`; `refused`: what it was served failed a check
    (`detail` names the rule).
    """

    state: TrustState
    since: AwareDatetime
    detail: str | None = Field(default=None, max_length=500, pattern=LINE_PATTERN)
    seq: int | None = Field(default=None, ge=0, le=MAX_ID)


# A header of `GET .../desired`: what the registry takes beyond the first protocol, as
# comma-separated names. `record-trust`: a record's body may carry `trust`; `record-tag`:
# it may carry `state_tag`, and its answer then says the state's tag after it.
FEATURES: Final = "Skillreg-Features"
RECORD_TRUST: Final = "record-trust"
RECORD_TAG: Final = "record-tag"


class RecordRequest(_Wire):
    """`PUT .../targets/{id}/skills/{slug}`: a compare-and-swap on the skill's record.

    `expected` is the record as the reconciler read it (null: none); `record` the new
    values; `action`, `drift` and `error_code` go into the outbox event. `trust`, if
    given, is the host's trust report (as `PUT .../targets/{id}/trust` takes it), kept in
    the same transaction: a host that applied a new state tells both in one write.
    `state_tag`, if given, is the tag of the desired state the host holds (its `ETag`):
    the answer then gives the tag of that state with this record (see `RecordResult`).
    """

    expected: AppliedState | None
    record: NewState
    action: Action
    drift: list[DriftEntry] = Field(default_factory=list, max_length=MAX_DRIFT_IN_EVENT)
    error_code: str | None = Field(default=None, max_length=64, pattern=r"^[a-z_]+$")
    trust: TrustReport | None = None
    state_tag: str | None = Field(default=None, max_length=128, pattern=LINE_PATTERN)

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


class RecordResult(_Wire):
    """The record as it now is; `changed` is false if it already said so (no event).

    `state_tag`: asked with the request's `state_tag`, the tag of the desired state the
    host holds once its records say `record`, if nothing else changed since it fetched
    that state (then `If-None-Match` with it answers 304); else null.
    """

    record: AppliedRecord
    changed: bool
    state_tag: str | None = Field(default=None, max_length=128, pattern=LINE_PATTERN)
