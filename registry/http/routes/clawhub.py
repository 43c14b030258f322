"""The ClawHub-compatible API: what the `clawhub` client (npm `clawhub`) asks, under `/clawhub`.

`clawhub --registry https://host/clawhub ...` builds its URLs relative to that base
(`/clawhub/api/v1/...`). The routes serve the marketplace catalog through `reg.clawhub`
(docs/clawhub.md has the model and what is not served); the JSON is the shape the client
validates (its arktype schemas, clawhub 0.23.3), times in milliseconds.

Access follows `SKILLREG_CLAWHUB`: `off` answers 404 everywhere here; `public` serves reads
to anyone; `private` needs a token of any workspace (401 without). `whoami` needs a token;
uploads and publishes need a `write` token of the catalog workspace, and the version they
write records and signs that token (`token:<id>`), never a name the request declares.
These routes are outside the OpenAPI document: their contract is ClawHub's.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, Field

from registry.api import Registry
from registry.api.clawhub import ClawSkill, ClawUpload, ClawVersion
from registry.domain import clawhub as mapping
from registry.domain.access import Role
from registry.errors import ListingNotFound
from registry.http.auth import Caller, authenticate, bearer, registry_of
from registry.http.problems import HttpProblem
from registry.http.routes.common import attachment, json_body, location, read_body
from registry.http.schemas import SLUG_PATTERN

PREFIX: Final = "/clawhub"
API: Final = "/api/v1"
_SHA256: Final = r"^[0-9a-fA-F]{64}$"

router = APIRouter(prefix=PREFIX, include_in_schema=False)

Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
Slug = Annotated[str, Query(pattern=SLUG_PATTERN, max_length=64)]
PathSlug = Annotated[str, Path(pattern=SLUG_PATTERN, max_length=64)]
OwnerHandle = Annotated[str | None, Query(alias="ownerHandle", max_length=128)]
Limit = Annotated[int, Query(ge=1, le=200)]


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def _mode(request: Request) -> str:
    registry: Registry = request.app.state.registry
    mode: str = registry.settings.clawhub
    if mode == "off":
        raise HttpProblem("not_found", "the ClawHub-compatible API is not served here")
    return mode


async def _reader(request: Request, credentials: Credentials) -> Registry:
    """The registry for a read: anyone when public, a token of any workspace when private."""
    if _mode(request) == "private":
        await authenticate(request, credentials, None, needed=Role.READ)
    return registry_of(request)


async def _publisher(request: Request, credentials: Credentials) -> Caller:
    """A `write` token of the catalog workspace: the only callers that publish listings."""
    _mode(request)
    caller = await authenticate(request, credentials, None, needed=Role.WRITE)
    catalog = registry_of(request).settings.catalog_workspace
    if caller.token.workspace != catalog:
        raise HttpProblem(
            "forbidden",
            f"publishing needs a token of the catalog workspace {catalog!r}",
            status=403,
            extra={"details": {"needed_workspace": catalog}},
        )
    return caller


Reader = Annotated[Registry, Depends(_reader)]
Publisher = Annotated[Caller, Depends(_publisher)]


def _owner_check(registry: Registry, slug: str, owner: str | None) -> None:
    """A listing asked for under another owner handle does not exist there."""
    if owner is not None and owner.strip().lstrip("@").lower() != registry.clawhub.owner:
        raise ListingNotFound(slug)


def _number(slug: str, version: str | None) -> int | None:
    """The registry version a ClawHub version string names (None: the newest)."""
    if version is None or version in {"", "latest"}:
        return None
    number = mapping.version_of(version)
    if number is None:
        raise ListingNotFound(slug)
    return number


def _version(version: ClawVersion) -> dict[str, Any]:
    return {
        "version": version.semver,
        "createdAt": _ms(version.created_at),
        "changelog": version.changelog,
        "changelogSource": "user",
        "license": None,
    }


def _owner(handle: str) -> dict[str, Any]:
    return {"handle": handle, "displayName": handle, "image": None}


def _skill(skill: ClawSkill) -> dict[str, Any]:
    return {
        "slug": skill.slug,
        "displayName": skill.slug,
        "summary": skill.summary,
        "description": skill.summary,
        "tags": {"latest": skill.latest.semver},
        "stats": {"versions": skill.latest.number},
        "createdAt": _ms(skill.created_at),
        "updatedAt": _ms(skill.latest.created_at),
        "latestVersion": _version(skill.latest),
    }


# Every version the catalog serves passed the content check: blocked content is refused
# before it is stored (docs/write-path.md), so there is no suspicious or malicious verdict.
MODERATION: Final = {
    "isSuspicious": False,
    "isMalwareBlocked": False,
    "verdict": "clean",
    "reasonCodes": [],
    "updatedAt": None,
    "engineVersion": None,
    "summary": "passed the registry's content check",
}


@router.get(API + "/whoami", name="clawhub_whoami")
async def whoami(request: Request, credentials: Credentials) -> dict[str, Any]:
    """The token's workspace as the handle; its principal as the display name."""
    _mode(request)
    caller = await authenticate(request, credentials, None, needed=Role.READ)
    role = "admin" if caller.token.role is Role.ADMIN else "user"
    return {
        "user": {
            "handle": caller.token.workspace,
            "displayName": caller.principal,
            "image": None,
            "role": role,
        }
    }


@router.get(API + "/search", name="clawhub_search")
async def search(
    registry: Reader,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    limit: Limit = 25,
) -> dict[str, Any]:
    """Full-text search of the listings (docs/search.md); `mode=exact` is not told apart."""
    hits = await registry.clawhub.search(q, limit=limit)
    owner = registry.clawhub.owner
    return {
        "results": [
            {
                "slug": hit.slug,
                "displayName": hit.slug,
                "summary": hit.summary,
                "version": mapping.semver_of(hit.version),
                "score": hit.score,
                "ownerHandle": owner,
                "owner": {"handle": owner, "displayName": owner},
            }
            for hit in hits
        ]
    }


@router.get(API + "/skills", name="clawhub_list")
async def list_skills(
    registry: Reader,
    limit: Limit = 25,
    cursor: Annotated[str | None, Query(pattern=SLUG_PATTERN)] = None,
    prefix: Annotated[str | None, Query(max_length=64)] = None,
) -> dict[str, Any]:
    """The listings by slug, a page at a time (`sort` is accepted and not applied)."""
    page = await registry.clawhub.skills(limit=limit, cursor=cursor, prefix=prefix)
    return {"items": [_skill(s) for s in page.items], "nextCursor": page.next_cursor}


@router.get(API + "/skills/{slug}", name="clawhub_skill")
async def skill(registry: Reader, slug: PathSlug, owner: OwnerHandle = None) -> dict[str, Any]:
    """A listing's detail, its newest version, owner and moderation."""
    _owner_check(registry, slug, owner)
    found = await registry.clawhub.skill(slug)
    return {
        "skill": _skill(found),
        "latestVersion": _version(found.latest),
        "metadata": None,
        "owner": _owner(found.owner),
        "moderation": MODERATION,
    }


@router.get(API + "/skills/{slug}/versions", name="clawhub_versions")
async def versions(
    registry: Reader,
    slug: PathSlug,
    limit: Limit = 25,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
    owner: OwnerHandle = None,
) -> dict[str, Any]:
    """A listing's versions, newest first."""
    _owner_check(registry, slug, owner)
    page = await registry.clawhub.versions(slug, limit=limit, cursor=cursor)
    return {"items": [_version(v) for v in page.items], "nextCursor": page.next_cursor}


@router.get(API + "/skills/{slug}/versions/{version}", name="clawhub_version")
async def version(
    registry: Reader,
    slug: PathSlug,
    version: Annotated[str, Path(max_length=64)],
    owner: OwnerHandle = None,
) -> dict[str, Any]:
    """One version and its files, each with its size and SHA-256."""
    _owner_check(registry, slug, owner)
    number = _number(slug, version)
    if number is None:
        number = (await registry.clawhub.skill(slug)).latest.number
    found, files = await registry.clawhub.version(slug, number)
    body = _version(found)
    body["files"] = [
        {"path": f.path, "size": f.size, "sha256": f.sha256, "contentType": f.content_type}
        for f in files
    ]
    return {"version": body, "skill": {"slug": slug, "displayName": slug}}


@router.get(API + "/skills/{slug}/file", name="clawhub_file")
async def file(
    registry: Reader,
    slug: PathSlug,
    *,
    path: Annotated[str, Query(min_length=1, max_length=4096)],
    version: Annotated[str | None, Query(max_length=64)] = None,
    tag: Annotated[str | None, Query(max_length=64)] = None,
    owner: OwnerHandle = None,
) -> Response:
    """One file's bytes; `tag` may only be `latest`."""
    _owner_check(registry, slug, owner)
    if tag not in (None, "latest"):
        raise ListingNotFound(slug)
    data = await registry.clawhub.file(slug, _number(slug, version), path)
    return Response(
        data,
        media_type=mapping.content_type(path),
        headers={"X-Content-Type-Options": "nosniff"},
    )


@router.get(API + "/resolve", name="clawhub_resolve")
async def resolve(
    registry: Reader,
    slug: Slug,
    hash: Annotated[str, Query(pattern=_SHA256)],  # noqa: A002 - the client's parameter
    owner: OwnerHandle = None,
) -> dict[str, Any]:
    """Which version has this fingerprint (the client's hash of a local copy), and the newest."""
    _owner_check(registry, slug, owner)
    match, latest = await registry.clawhub.resolve(slug, hash.lower())
    return {
        "match": None if match is None else {"version": mapping.semver_of(match)},
        "latestVersion": None if latest is None else {"version": mapping.semver_of(latest)},
    }


@router.get(API + "/download", name="clawhub_download")
async def download(
    registry: Reader,
    slug: Slug,
    version: Annotated[str | None, Query(max_length=64)] = None,
    owner: OwnerHandle = None,
) -> Response:
    """A version as a reproducible zip: the same bytes, SHA-256 and ETag every time."""
    _owner_check(registry, slug, owner)
    archive = await registry.clawhub.archive(slug, _number(slug, version))
    semver = mapping.semver_of(archive.version)
    return Response(
        archive.data,
        media_type="application/zip",
        headers={
            "ETag": f'"sha256:{archive.sha256}"',
            "Repr-Digest": f"sha-256=:{_b64(archive.sha256)}:",
            "Content-Disposition": attachment(f"{slug}-{semver}.zip"),
            "Cache-Control": "public, max-age=31536000, immutable"
            if registry.settings.clawhub == "public"
            else "private, max-age=31536000, immutable",
        },
    )


def _b64(hex_digest: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_digest)).decode()


class UploadUrlRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096)
    size: int = Field(ge=0)
    sha256: str = Field(pattern=_SHA256)
    contentType: str | None = Field(default=None, max_length=255)  # noqa: N815 - ClawHub's


@router.post(API + "/skills/-/upload-url", name="clawhub_upload_url")
async def upload_url(request: Request, caller: Publisher) -> dict[str, Any]:
    """Where to send one file of a coming publish: the upload route, named by its SHA-256."""
    del caller
    wanted = await json_body(request, UploadUrlRequest)
    sha256 = wanted.sha256.lower()
    url = location(request, "clawhub_upload", sha256=sha256)
    if not url.startswith(("http://", "https://")):
        # The client only takes an absolute URL. Without SKILLREG_PUBLIC_BASE_URL it is
        # the address this request came to: answered to the caller that chose it, in a
        # POST's answer that no cache keeps.
        url = str(request.base_url).rstrip("/") + url
    return {"uploadUrl": url, "uploadTicket": sha256}


@router.post(API + "/uploads/{sha256}", name="clawhub_upload")
async def upload(
    request: Request, sha256: Annotated[str, Path(pattern=_SHA256)], caller: Publisher
) -> dict[str, Any]:
    """Store one file (content-checked, verified against the SHA-256); its id is its BLAKE3."""
    data = await read_body(request)
    storage = await registry_of(request).clawhub.upload(caller.token.workspace, data, sha256)
    return {"storageId": storage}


class PublishFile(BaseModel):
    path: str = Field(min_length=1, max_length=4096)
    size: int = Field(ge=0)
    storageId: str = Field(pattern=r"^[0-9a-f]{64}$")  # noqa: N815 - ClawHub's
    sha256: str = Field(pattern=_SHA256)
    contentType: str | None = Field(default=None, max_length=255)  # noqa: N815
    uploadTicket: str | None = Field(default=None, max_length=255)  # noqa: N815


class PublishRequest(BaseModel):
    slug: str = Field(pattern=SLUG_PATTERN, max_length=64)
    displayName: str = Field(default="", max_length=200)  # noqa: N815 - ClawHub's
    ownerHandle: str | None = Field(default=None, max_length=128)  # noqa: N815
    version: str = Field(min_length=5, max_length=64)
    changelog: str = Field(default="", max_length=10_000)
    files: list[PublishFile] = Field(min_length=1, max_length=1000)


@router.post(API + "/skills", name="clawhub_publish")
async def publish(request: Request, caller: Publisher) -> Response:
    """Publish uploaded files as the listing's next version (docs/clawhub.md, "Publish")."""
    body = await json_body(request, PublishRequest)
    registry = registry_of(request)
    _owner_check(registry, body.slug, body.ownerHandle)
    files = [ClawUpload(f.path, f.storageId, f.sha256, f.size) for f in body.files]
    pub = await registry.clawhub.publish(
        caller.token.workspace, body.slug, body.version, files, changelog=body.changelog
    )
    semver = mapping.semver_of(pub.version)
    return JSONResponse(
        {
            "ok": True,
            "skillId": body.slug,
            "versionId": f"{body.slug}@{semver}",
            "slug": body.slug,
            "version": semver,
            "status": "published",
            "publicationStatus": "published",
        },
        status_code=201 if pub.created else 200,
    )
