"""The marketplace: the catalog of listings, install and update jobs, and the job queue.

- `/v1/catalog/listings...`: any valid token reads the catalog (it is shared by every
  workspace); only a `write` token *of the catalog workspace* publishes a listing version,
  as an archive, conditionally like any write (`If-Match` / `If-None-Match: *`).
- `POST .../installs` and `POST .../skills/{slug}/update` queue a durable job and answer
  `202 Accepted` with it (`Location`: the job); the same idempotency key answers the job it
  already names with `200`. Workers run the jobs: `skillreg serve` runs one in-process
  unless started with `--no-jobs`, and `skillreg jobs run` runs more.
- `GET .../jobs[/{job}]`: the workspace's jobs, to follow one to its outcome.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from registry.api import Registry
from registry.api.types import Enqueued
from registry.domain.arguments import TEXT_PATTERN
from registry.domain.model import Scope
from registry.domain.numbers import MAX_ID, MAX_VERSION
from registry.errors import HeadConflict, JobNotFound
from registry.http.archive import tar_gz
from registry.http.auth import Caller, authorize, registry_of
from registry.http.metrics import Metrics
from registry.http.preconditions import (
    current_head,
    entity_tag,
    expected_head,
    lost_precondition,
)
from registry.http.problems import HttpProblem
from registry.http.routes.common import (
    DEFAULT,
    Agent,
    Slug,
    Workspace,
    attachment,
    json_body,
    json_request_body,
    location,
    make_scope,
    media_type,
    precondition_headers,
    problems,
    read_body,
    refuse_credentials,
)
from registry.http.schemas import (
    SLUG_PATTERN,
    InstallRequest,
    JobBody,
    JobList,
    JobQueued,
    ListingBody,
    ListingList,
    ListingPublished,
    PublishResult,
    UpdateRequest,
)

catalog_router = APIRouter(prefix="/v1/catalog", tags=["catalog"])
jobs_router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["marketplace"])
routers = (catalog_router, jobs_router)

Authorized = Annotated[Caller, Depends(authorize)]
Listing = Annotated[str, Path(pattern=SLUG_PATTERN, description="the listing id")]
Version = Annotated[
    int | None, Query(ge=1, le=MAX_VERSION, description="a listing version (default: the newest)")
]
JobId = Annotated[int, Path(ge=1, le=MAX_ID, description="the job's id")]

# What an archive upload may be labelled; the reader recognises the format by its bytes.
ARCHIVE_TYPES: Final = frozenset(
    {
        "application/zip",
        "application/gzip",
        "application/x-gzip",
        "application/x-tar",
        "application/octet-stream",
    }
)


def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def catalog_scope(registry: Registry) -> Scope:
    """The scope listings live in (docs/marketplace.md)."""
    return Scope(registry.settings.catalog_workspace)


# ---------------------------------------------------------------- the catalog


@catalog_router.get(
    "/listings",
    name="list_listings",
    summary="The catalog's listings, by id, paged",
    response_model=ListingList,
    responses=problems(422),
)
async def list_listings(
    request: Request,
    caller: Authorized,
    *,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    after: Annotated[
        str | None,
        Query(pattern=SLUG_PATTERN, description="`next_after` of the previous page"),
    ] = None,
) -> ListingList:
    """Each listing's newest version, its manifest hash and its ETag."""
    del caller
    return ListingList.of(
        await registry_of(request).marketplace.list_listings(limit=limit, after=after)
    )


@catalog_router.get(
    "/listings/{listing}",
    name="get_listing",
    summary="A listing version's manifest (default: the newest), with the listing's ETag",
    response_model=ListingBody,
    responses=problems(404, 422),
)
async def get_listing(
    request: Request, listing: Listing, caller: Authorized, version: Version = None
) -> Response:
    """The manifest an install of this version records as its baseline."""
    del caller
    registry = registry_of(request)
    body = ListingBody.of(await registry.marketplace.listing(listing, version))
    head = await current_head(registry, catalog_scope(registry), listing)
    headers = {} if head is None else {"ETag": head.etag}
    return JSONResponse(body.model_dump(mode="json"), headers=headers)


@catalog_router.get(
    "/listings/{listing}/archive",
    name="get_listing_archive",
    summary="A listing version as a .tar.gz",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}}},
        **problems(404, 422),
    },
)
async def get_listing_archive(
    request: Request, listing: Listing, caller: Authorized, version: Version = None
) -> Response:
    """Every file of the version under `<listing>/`, verified, reproducible."""
    del caller
    package = await registry_of(request).marketplace.read_listing(listing, version)
    headers = {
        "Content-Disposition": attachment(f"{listing}-{package.version}.tar.gz"),
    }
    chunks = tar_gz(listing, package.files, int(package.created_at.timestamp()))
    return StreamingResponse(chunks, media_type="application/gzip", headers=headers)


_PUT_LISTING: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            kind: {"schema": {"type": "string", "format": "binary"}}
            for kind in sorted(ARCHIVE_TYPES)
        },
    },
    "parameters": precondition_headers(
        update="a new version: the listing's current ETag",
        create="a new listing: it must not exist",
    ),
}


@catalog_router.put(
    "/listings/{listing}",
    name="put_listing",
    summary="Publish an archive (.zip, .tar.gz, .tar) as a listing's next version",
    response_model=ListingPublished,
    responses={
        201: {"model": ListingPublished, "description": "The listing was created"},
        **problems(403, 409, 412, 413, 415, 422, 428, 429),
    },
    openapi_extra=_PUT_LISTING,
)
async def put_listing(
    request: Request,
    listing: Listing,
    caller: Authorized,
    message: Annotated[str, Query(max_length=10_000, pattern=TEXT_PATTERN)] = "",
) -> Response:
    """Read the archive safely (links, escaping names, bombs refused), publish its files.

    Needs a `write` token of the catalog workspace (`SKILLREG_CATALOG_WORKSPACE`). The
    archive is checked before anything is stored; a refusal stores nothing.
    """
    if media_type(request) not in ARCHIVE_TYPES:
        raise HttpProblem(
            "unsupported_media_type",
            "send the archive as application/zip, application/gzip, application/x-tar "
            "or application/octet-stream",
        )
    registry = registry_of(request)
    scope = catalog_scope(registry)
    expected = await expected_head(
        request, registry, scope, listing, allow_create=True, already_applied_ok=True
    )
    data = await read_body(request)
    try:
        with _metrics(request).write("import"):
            result = await registry.marketplace.import_listing(
                listing, data, actor=caller.actor, message=message, expected_head=expected
            )
    except HeadConflict as conflict:
        raise await lost_precondition(
            request, registry, scope, listing, conflict=conflict, expected=expected
        ) from None
    _metrics(request).upload_bytes.labels("archive").inc(len(data))
    pub = result.publication
    info = await registry.package_info(scope, listing, pub.version)
    tag = entity_tag(info.skill_id, info.version, info.manifest_hash)
    body = ListingPublished(
        **PublishResult.of(scope, listing, pub, tag).model_dump(),
        format=result.format,
        files=result.files,
        stripped=result.stripped,
    )
    status = 201 if pub.created and pub.retired is None else 200
    where = location(request, "get_listing", listing=listing)
    return JSONResponse(
        body.model_dump(mode="json"),
        status_code=status,
        headers={"ETag": tag, "Location": where},
    )


# ---------------------------------------------------------------- install and update jobs


def _queued(request: Request, workspace: str, enqueued: Enqueued) -> Response:
    body = JobQueued(created=enqueued.created, job=JobBody.of(enqueued.job))
    where = location(request, "get_job", workspace=workspace, job=enqueued.job.id)
    return JSONResponse(
        body.model_dump(mode="json"),
        status_code=202 if enqueued.created else 200,
        headers={"Location": where},
    )


def _key(workspace: str, key: str | None) -> str | None:
    """A caller's key, in the workspace's own namespace (keys are unique service-wide)."""
    return None if key is None else f"http:{workspace}/{key}"


@jobs_router.post(
    "/installs",
    name="install_listing",
    summary="Queue the install of a catalog listing into the scope (202: the job)",
    status_code=202,
    response_model=JobQueued,
    responses={
        200: {"model": JobQueued, "description": "The key already names this job"},
        **problems(400, 403, 404, 422),
    },
    openapi_extra=json_request_body(InstallRequest),
)
async def install_listing(
    request: Request,
    *,
    workspace: Workspace,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Response:
    """The listing version is resolved now (404 if there is none); a worker installs it.

    The job's outcome (`GET .../jobs/{id}`) is the installed copy's version, or why it
    failed: an owner-saved skill of that slug is never replaced (`ownership_conflict`).
    """
    body = await json_body(request, InstallRequest)
    refuse_credentials(request, actor=body.actor, key=body.key)
    enqueued = await registry_of(request).marketplace.enqueue_install(
        make_scope(workspace, agent),
        body.listing,
        body.version,
        actor=body.actor or caller.actor,
        key=_key(workspace, body.key),
    )
    return _queued(request, workspace, enqueued)


@jobs_router.post(
    "/skills/{slug}/update",
    name="update_skill",
    summary="Queue the update of an installed copy to a listing version (202: the job)",
    status_code=202,
    response_model=JobQueued,
    responses={
        200: {"model": JobQueued, "description": "The key already names this job"},
        **problems(400, 403, 404, 409, 422),
    },
    openapi_extra=json_request_body(UpdateRequest),
)
async def update_skill(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Response:
    """Fast-forward an unedited copy; merge or propose for an edited one (never overwrite).

    The job compares-and-swaps on the head it reads when it runs, so it needs no
    `If-Match`: an owner's edit in between is merged or proposed, not lost.
    """
    body = await json_body(request, UpdateRequest)
    refuse_credentials(request, actor=body.actor, key=body.key)
    enqueued = await registry_of(request).marketplace.enqueue_update(
        make_scope(workspace, agent),
        slug,
        version=body.version,
        policy=body.policy,
        actor=body.actor or caller.actor,
        key=_key(workspace, body.key),
    )
    return _queued(request, workspace, enqueued)


@jobs_router.get(
    "/jobs",
    name="list_jobs",
    summary="The workspace's jobs, newest first, paged",
    response_model=JobList,
    responses=problems(400, 403, 404, 422),
)
async def list_jobs(
    request: Request,
    *,
    workspace: Workspace,
    caller: Authorized,
    status: Annotated[
        str | None, Query(pattern=r"^(queued|running|succeeded|failed)$", description="only")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID, description="`next_before`")] = None,
) -> JobList:
    """Install and update jobs of every scope of the workspace."""
    del caller
    page = await registry_of(request).marketplace.list_jobs(
        status=status, workspace=workspace, limit=limit, before=before
    )
    return JobList.of(page)


@jobs_router.get(
    "/jobs/{job}",
    name="get_job",
    summary="A job: its status, attempts, result or last error",
    response_model=JobBody,
    responses=problems(400, 403, 404, 422),
)
async def get_job(
    request: Request, workspace: Workspace, job: JobId, caller: Authorized
) -> JobBody:
    """`queued` or `running` until a worker finishes it, then `succeeded` or `failed`.

    `result` holds a success's outcome, `last_error` the latest failure's; a retry waits
    for `run_after`.
    """
    del caller
    row = await registry_of(request).marketplace.job(job)
    if row.workspace != workspace:  # another workspace's job is as absent as none
        raise JobNotFound(job)
    return JobBody.of(row)
