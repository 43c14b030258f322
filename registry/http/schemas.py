"""The JSON representations of the API (they generate the OpenAPI schemas).

Names follow the registry's own values; timestamps are RFC 3339 UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from registry.api.types import (
    GcFigures,
    JobFigures,
    JobPage,
    JobRow,
    LearningStatus,
    ListingVersion,
    ManifestFile,
    MaterializationFigures,
    PackageInfo,
    SkillPage,
)
from registry.domain.arguments import LINE_PATTERN, TEXT_PATTERN
from registry.domain.manifest import Manifest
from registry.domain.model import Publication, Scope
from registry.domain.numbers import MAX_ID, MAX_VERSION
from registry.http.preconditions import entity_tag
from registry.http.problems import public_error

DIGEST_PATTERN: Final = r"^[0-9a-f]{64}$"
# A slug is 1-64 letters, digits and hyphens, Unicode letters included (docs/package-format.md):
# this pattern only keeps separators, controls and blanks out; the registry checks the rest
# (`InvalidName`, 400).
SLUG_PATTERN: Final = r"^[^\s/\\\x00-\x1f\x7f]{1,64}$"
NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

# Origins a client may give a write; restore, marketplace and out-of-band versions are
# made by their own operations.
ClientOrigin = Literal["edit", "save", "learning", "import"]


# Every number a client sends is a JSON integer (`strict=True` on each field): pydantic's
# lax mode would read `true` and `1.0` as the version, size or ordinal 1.
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileEntry(_Model):
    """One file of a package."""

    path: str = Field(min_length=1, max_length=4096)
    digest: str = Field(pattern=DIGEST_PATTERN, description="lower-case hex BLAKE3 of the bytes")
    size: int = Field(strict=True, ge=0, le=MAX_ID)
    executable: bool = False

    @classmethod
    def list_of(cls, manifest: Manifest) -> list[FileEntry]:
        """The entries of `manifest`, in its order."""
        return [
            cls(path=e.path, digest=e.digest, size=e.size, executable=e.executable)
            for e in manifest.entries
        ]


# The rule for text a client sets (registry/domain/arguments.py, `check_text`): no
# control or bidi control character; multi-line text (a message, a reason) keeps \n and \t.
_TEXT: Final = TEXT_PATTERN
_LINE: Final = LINE_PATTERN

Source = Annotated[str, Field(min_length=1, max_length=500, pattern=_LINE)]


class ActorOptions(_Model):
    """Who acts, if not the token itself."""

    actor: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=_LINE,
        description="default: `token:<token id>`",
    )


class FindingApproval(_Model):
    """A content-check finding to approve, as a refused write listed it (never its value)."""

    path: str = Field(min_length=1, max_length=4096)
    ordinal: int = Field(strict=True, ge=1, le=MAX_VERSION)


class WriteOptions(_Model):
    """What a write records besides the files.

    `keep_auto_improve`: a person's write (origin `edit`, `import`) turns the skill's
    automatic improvements off unless this is true. `approve`: findings of a refused write
    the owner accepts (the owner role is needed).
    """

    message: str = Field(default="", max_length=10_000, pattern=_TEXT)
    actor: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=_LINE,
        description="default: `token:<token id>`",
    )
    sources: list[Source] = Field(default_factory=list, max_length=100)
    origin: ClientOrigin = "edit"
    keep_auto_improve: bool = False
    approve: list[FindingApproval] = Field(
        default_factory=list,
        max_length=1000,
        description="findings the owner approves (a held blob's too), by path and ordinal",
    )


class ManifestBody(WriteOptions):
    """`PUT .../skills/{slug}` as JSON: a manifest whose blobs were uploaded before."""

    files: list[FileEntry] = Field(max_length=10_000)

    def manifest_files(self) -> list[ManifestFile]:
        return [ManifestFile(f.path, f.digest, f.size, f.executable) for f in self.files]


class PackageMeta(WriteOptions):
    """The `meta` part of a multipart package upload."""

    executable: list[str] = Field(default_factory=list, max_length=10_000)


class SkillVersion(_Model):
    """A version of a skill: its manifest and metadata (the files are blobs, by digest)."""

    workspace: str
    agent: str
    slug: str
    version: int
    head: int
    etag: str
    manifest_hash: str
    origin: str
    actor: str
    message: str
    created_at: datetime
    file_count: int
    total_size: int
    triggers: list[str] = Field(description="discovery triggers (`metadata.triggers`)")
    files: list[FileEntry]
    skill_id: int = Field(description="the skill's id (a deleted skill's versions are named by it)")
    archived: bool = Field(description="a version of a deleted skill; `head` is its last version")

    @classmethod
    def of(cls, info: PackageInfo, etag: str) -> SkillVersion:
        return cls(
            workspace=info.scope.workspace,
            agent=info.scope.agent,
            slug=info.slug,
            version=info.version,
            head=info.head,
            etag=etag,
            manifest_hash=info.manifest.hash,
            origin=info.origin,
            actor=info.actor,
            message=info.message,
            created_at=info.created_at,
            file_count=info.manifest.file_count,
            total_size=info.manifest.total_size,
            triggers=list(info.triggers),
            files=FileEntry.list_of(info.manifest),
            skill_id=info.skill_id,
            archived=info.archived,
        )


class PublishResult(_Model):
    """The outcome of a write: the head it made (or found, when nothing changed).

    A learning write the owner's rules divert (202) made no version: `proposal` names the
    proposal it recorded (`proposal_kind` says why) or `pending` the pending write waiting
    for a saved slot; `version` and `etag` are then the skill's unchanged head (0 and null
    if the slug has no live skill).
    """

    workspace: str
    agent: str
    slug: str
    version: int
    etag: str | None
    manifest_hash: str
    created: bool = Field(description="this request appended `version`")
    retired: int | None = Field(description="the head it replaced")
    unchanged: bool = Field(description="the package already was the head; nothing written")
    uploaded: int
    uploaded_bytes: int
    proposal: int | None = None
    proposal_kind: str | None = None
    pending: int | None = None

    @classmethod
    def of(cls, scope: Scope, slug: str, pub: Publication, etag: str | None) -> PublishResult:
        return cls(
            workspace=scope.workspace,
            agent=scope.agent,
            slug=slug,
            version=pub.version,
            etag=etag,
            manifest_hash=pub.manifest_hash,
            created=pub.created,
            retired=pub.retired,
            unchanged=pub.unchanged,
            uploaded=pub.uploaded,
            uploaded_bytes=pub.uploaded_bytes,
            proposal=pub.proposal,
            proposal_kind=pub.proposal_kind,
            pending=pub.pending,
        )


class SkillItem(_Model):
    """One skill of a listing."""

    slug: str
    head: int
    etag: str
    manifest_hash: str
    file_count: int
    total_size: int
    kind: str
    state: str
    auto_improve: bool
    learning_paused: bool
    use_paused: bool
    updated_at: datetime
    triggers: list[str]


class SkillList(_Model):
    """A page of skills; pass `next_after` as `after` for the next page (null: the end)."""

    items: list[SkillItem]
    next_after: str | None

    @classmethod
    def of(cls, page: SkillPage) -> SkillList:
        return cls(
            items=[
                SkillItem(
                    slug=i.slug,
                    head=i.head,
                    etag=entity_tag(i.skill_id, i.head, i.manifest_hash),
                    manifest_hash=i.manifest_hash,
                    file_count=i.file_count,
                    total_size=i.total_size,
                    kind=i.kind,
                    state=i.state,
                    auto_improve=i.auto_improve,
                    learning_paused=i.learning_paused,
                    use_paused=i.use_paused,
                    updated_at=i.updated_at,
                    triggers=list(i.triggers),
                )
                for i in page.items
            ],
            next_after=page.next_after,
        )


class ListingItem(_Model):
    """One listing of the catalog."""

    listing: str
    head: int = Field(description="the newest version")
    etag: str = Field(description="what a publish's If-Match takes")
    manifest_hash: str
    file_count: int
    total_size: int
    updated_at: datetime


class ListingList(_Model):
    """A page of listings; pass `next_after` as `after` for the next page (null: the end)."""

    items: list[ListingItem]
    next_after: str | None

    @classmethod
    def of(cls, page: SkillPage) -> ListingList:
        return cls(
            items=[
                ListingItem(
                    listing=i.slug,
                    head=i.head,
                    etag=entity_tag(i.skill_id, i.head, i.manifest_hash),
                    manifest_hash=i.manifest_hash,
                    file_count=i.file_count,
                    total_size=i.total_size,
                    updated_at=i.updated_at,
                )
                for i in page.items
            ],
            next_after=page.next_after,
        )


class ListingBody(_Model):
    """A listing version: its manifest (the identity an install records) and who made it."""

    listing: str
    version: int
    head: int
    manifest_hash: str
    origin: str
    actor: str
    message: str
    created_at: datetime
    file_count: int
    total_size: int
    files: list[FileEntry]

    @classmethod
    def of(cls, listing: ListingVersion) -> ListingBody:
        return cls(
            listing=listing.listing,
            version=listing.version,
            head=listing.head,
            manifest_hash=listing.manifest_hash,
            origin=listing.origin,
            actor=listing.actor,
            message=listing.message,
            created_at=listing.created_at,
            file_count=listing.manifest.file_count,
            total_size=listing.manifest.total_size,
            files=FileEntry.list_of(listing.manifest),
        )


class ListingPublished(PublishResult):
    """An archive published as a listing version: the write's result and what was read."""

    format: str = Field(description="zip, tar.gz or tar")
    files: int
    stripped: str | None = Field(description="the common top-level folder removed, if any")


class JobBody(_Model):
    """A durable job (docs/marketplace.md): what it does, where it stands, what it left."""

    id: int
    kind: str
    workspace: str
    status: Literal["queued", "running", "succeeded", "failed"]
    attempts: int
    max_attempts: int
    run_after: datetime = Field(description="not claimed before this time")
    payload: dict[str, Any]
    result: dict[str, Any] | None = Field(description="the outcome of a job that succeeded")
    last_error: dict[str, Any] | None = Field(description="code, message, attempt, permanent")
    progress: dict[str, Any] | None = Field(
        default=None, description="what a long job has done so far (a rescan: done, total)"
    )
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, job: JobRow) -> JobBody:
        return cls(
            id=job.id,
            kind=job.kind,
            workspace=job.workspace,
            status=job.status,  # type: ignore[arg-type]  # the column's check constraint
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            run_after=job.run_after,
            payload=job.payload,
            result=job.result,
            last_error=public_error(job.last_error),
            progress=job.progress,
            created_at=job.created_at,
            updated_at=job.updated_at,
            finished_at=job.finished_at,
        )


class JobList(_Model):
    """A page of jobs, newest first; pass `next_before` as `before` (null: the end)."""

    items: list[JobBody]
    next_before: int | None

    @classmethod
    def of(cls, page: JobPage) -> JobList:
        return cls(items=[JobBody.of(j) for j in page.items], next_before=page.next_before)


class JobQueued(_Model):
    """The job an install or update request names; `created` is false for a repeated key."""

    created: bool
    job: JobBody


class InstallRequest(ActorOptions):
    """`POST .../installs`: install a catalog listing into the scope."""

    listing: str = Field(pattern=SLUG_PATTERN, max_length=64)
    version: int | None = Field(
        default=None, strict=True, ge=1, le=MAX_VERSION, description="default: newest"
    )
    key: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=_LINE,
        description="idempotency key in the workspace: a repeated key answers its job",
    )


class UpdateRequest(ActorOptions):
    """`POST .../skills/{slug}/update`: move an installed copy to a listing version."""

    version: int | None = Field(
        default=None, strict=True, ge=1, le=MAX_VERSION, description="default: newest"
    )
    policy: Literal["merge", "propose"] | None = Field(
        default=None,
        description="for an edited copy: merge cleanly or propose (default: the service's)",
    )
    key: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=_LINE,
        description="idempotency key in the workspace: a repeated key answers its job",
    )


class BlobFinding(_Model):
    """A content-check finding in a held blob: what it looks like and where, never its value."""

    pattern_class: str
    ordinal: int
    line: int


class BlobStored(_Model):
    """A blob upload's result; `held`: stored unreadable, its `findings` awaiting approval."""

    digest: str
    size: int
    held: bool = False
    findings: list[BlobFinding] = Field(default_factory=list)


class Health(_Model):
    status: Literal["ok"] = "ok"


class Ready(_Model):
    ready: bool
    database: bool
    blob_store: bool


class EventStatus(_Model):
    latest_id: int | None
    latest_at: datetime | None
    age_seconds: float | None


class UploadStatus(_Model):
    active_claims: int
    oldest_claim_at: datetime | None
    pending_blobs: int
    pending_bytes: int


class ServiceStatusBody(_Model):
    """`/v1/status`: service-wide aggregates (counts, bytes, ages; never names)."""

    generated_at: datetime
    events: EventStatus
    uploads: UploadStatus
    storage: GcFigures = Field(description="blob bytes stored, referenced, orphaned; last GC")
    materialization: MaterializationFigures = Field(
        description="targets, skills pending or failed on them, the oldest pending"
    )
    jobs: JobFigures = Field(description="the job queue: backlog, due, expired leases, oldest")
    learning: LearningStatus | None = Field(
        default=None,
        description="the token's workspace: pending writes, open decisions, suppressions",
    )


class Problem(BaseModel):
    """An error (RFC 9457). `code` is stable; `details` are the error's own fields."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    code: str
