"""Two-phase upload: blobs first, by digest, then a manifest that names them.

    PUT blob ──► verify digest ──► content check ──► claim (upload session) ──► put ──► confirm live
    PUT manifest ──► check sizes and visibility ──► fetch the named blobs ──► write_package

A blob upload verifies that the bytes hash to the digest and runs the content check on them
before anything is stored (digests found clean before are not scanned again, and a clean
result is remembered, so the publish that names the blob does not scan it again). A blob
with a finding is refused (`ContentBlocked`, at the digest) and nothing is stored, unless
the upload asks to *hold* it: then it is stored under a held claim
(`registry/db/uploads.py`), which lets a manifest of the workspace name it but no read
return it, and the publish that names it must approve its findings (`approve`, as for any
write) or be refused; it becomes readable only when that publish commits (its version
then references it), and an unapproved one is reclaimed by GC like any unused upload.

Then the upload claims the digest for an upload session of its own (a claim with a fresh
write id and the usual TTL, `claim_ttl`), stores it, and marks it `live` while the claim is
still held. The claim keeps GC away from the blob until the manifest that names it is
published or the claim expires (then GC reclaims the bytes after its grace period,
invariant I4).

Publishing a manifest does not trust it: the package goes through the same write as any
other (`publish.write_package`), with its bytes fetched back from the store. So paths,
limits, `SKILL.md` frontmatter and the content check all run on the real bytes, and digests
the content check found clean before are not scanned again. A manifest may only name blobs
its workspace sees (`registry/db/uploads.py`): a digest is no proof of having the bytes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobCorrupted, BlobNotFound, BlobStoreError
from blobstore.digest import is_digest
from registry.db import blobs as db_blobs
from registry.db import scans as db_scans
from registry.db import uploads as db_uploads
from registry.domain.manifest import file_digest
from registry.domain.model import PackageFile, Publication, check_workspace
from registry.domain.scanner import Finding, blocking_error
from registry.errors import (
    BlobDigestMismatch,
    BlobsMissing,
    BlobUnknown,
    Inconsistency,
    InvalidName,
    LimitExceeded,
    ManifestInvalid,
    StorageUnavailable,
)
from registry.services.context import Context, blob_store_failed, offloaded
from registry.services.write import content, publish, settle
from registry.services.write.request import WriteRequest

_FETCH_CONCURRENCY: Final = 16
# An upload whose claim lapsed before it could be confirmed (the process stalled for
# `claim_ttl`) claims and stores again; this bounds how often.
_ATTEMPTS: Final = 3


@dataclass(frozen=True)
class UploadedBlob:
    """The result of a blob upload.

    `findings` are the content check's findings in a held blob (none otherwise): the
    publish that names it approves them by path and `ordinal`.
    """

    digest: str
    size: int
    stored: bool  # False when the store already held the object
    findings: tuple[Finding, ...] = ()

    @property
    def held(self) -> bool:
        return bool(self.findings)


@dataclass(frozen=True)
class ManifestFile:
    """One file of a manifest as a client declares it."""

    path: str
    digest: str
    size: int
    executable: bool = False


def _check_digest(digest: str) -> str:
    if not is_digest(digest):
        raise InvalidName("digest", digest[:80], "64 lower-case hex characters (BLAKE3)")
    return digest


async def _hash(data: bytes) -> str:
    return await offloaded(len(data), file_digest, data)


async def upload_blob(
    ctx: Context, workspace: str, digest: str, data: bytes, *, hold: bool = False
) -> UploadedBlob:
    """Store `data` under `digest` for `workspace`'s next manifest; verified and checked first.

    A blob with content-check findings is refused (`ContentBlocked`), or with `hold` stored
    unreadable until a publish that approves its findings commits (module docstring).
    """
    check_workspace(workspace)
    _check_digest(digest)
    limit = ctx.limits.max_file_bytes
    if len(data) > limit:
        raise LimitExceeded("max_file_bytes", limit, len(data))
    actual = await _hash(data)
    if actual != digest:
        raise BlobDigestMismatch(digest, actual)
    findings = await content.blob_findings(ctx, digest, data)
    if findings and not hold:
        blocked = blocking_error(findings)
        assert blocked is not None
        raise blocked
    for _ in range(_ATTEMPTS):
        result = await _claim_store_confirm(ctx, workspace, digest, data, findings)
        if result is not None:
            return result
    raise StorageUnavailable("blob store", "the upload's claim kept lapsing before it was stored")


async def _claim_store_confirm(
    ctx: Context, workspace: str, digest: str, data: bytes, findings: Sequence[Finding]
) -> UploadedBlob | None:
    write_id = db_uploads.held_write_id() if findings else str(uuid.uuid4())
    now = ctx.clock.now()
    expires = now + timedelta(seconds=ctx.settings.claim_ttl)

    async def claim(conn: AsyncConnection) -> dict[str, str]:
        if not findings:  # remembered here: one commit fewer than a transaction of its own
            await db_scans.remember_clean(conn, [digest], ctx.scanner.fingerprint, now)
        return await db_blobs.claim(
            conn,
            write_id=write_id,
            workspace=workspace,
            sizes={digest: len(data)},
            now=now,
            expires_at=expires,
        )

    async def confirm(conn: AsyncConnection) -> bool:
        return await db_uploads.confirm_upload(
            conn, write_id=write_id, digest=digest, now=ctx.clock.now()
        )

    statuses = await ctx.write(claim, workspace=workspace)
    try:
        stored = False
        if statuses.get(digest) != "live":
            try:
                stored = await ctx.blobs.put(digest, data)
            except BlobStoreError as exc:
                raise blob_store_failed(exc) from exc
        confirmed = await ctx.write(confirm, workspace=workspace)
    except BaseException:
        # Cancellation included: nothing references the blob yet, so the claim goes and
        # GC reclaims the object after its grace period.
        await ctx.shielded(settle.release(ctx, workspace, write_id))
        raise
    if not confirmed:
        await ctx.shielded(settle.release(ctx, workspace, write_id))
        return None
    return UploadedBlob(digest, len(data), stored, tuple(findings))


async def blob_size(ctx: Context, workspace: str, digest: str) -> int:
    """The size of a blob `workspace` sees (`BlobUnknown` otherwise)."""
    check_workspace(workspace)
    _check_digest(digest)
    now = ctx.clock.now()

    async def work(conn: AsyncConnection) -> dict[str, int]:
        return await db_uploads.visible(conn, workspace, [digest], now)

    sizes = await ctx.read(work)
    if digest not in sizes:
        raise BlobUnknown(digest)
    return sizes[digest]


async def read_blob(ctx: Context, workspace: str, digest: str) -> bytes:
    """The verified bytes of a blob `workspace` sees (`BlobUnknown` otherwise)."""
    await blob_size(ctx, workspace, digest)
    return (await _fetch(ctx, [digest]))[digest]


async def _fetch(ctx: Context, digests: Sequence[str]) -> dict[str, bytes]:
    gate = asyncio.Semaphore(_FETCH_CONCURRENCY)

    async def one(digest: str) -> tuple[str, bytes]:
        async with gate:
            return digest, await ctx.blobs.get(digest)

    try:
        return dict(await asyncio.gather(*(one(d) for d in sorted(set(digests)))))
    except (BlobNotFound, BlobCorrupted) as exc:
        raise Inconsistency(f"a referenced blob is unreadable: {exc}") from exc
    except BlobStoreError as exc:
        raise blob_store_failed(exc) from exc


def _check_declared(files: Sequence[ManifestFile], ctx: Context) -> None:
    """Refuse a manifest by what it declares, before anything is fetched."""
    limits = ctx.limits
    if len(files) > limits.max_files:
        raise LimitExceeded("max_files", limits.max_files, len(files))
    seen: set[str] = set()
    for f in files:
        if f.path in seen:
            raise ManifestInvalid("duplicate_path", "a path is listed twice", f.path)
        seen.add(f.path)
        if not is_digest(f.digest):
            raise ManifestInvalid("digest", "64 lower-case hex characters (BLAKE3)", f.path)
        if f.size < 0:
            raise ManifestInvalid("size", "a size is a non-negative integer", f.path)
        if f.size > limits.max_file_bytes:
            raise LimitExceeded("max_file_bytes", limits.max_file_bytes, f.size, path=f.path)
    total = sum(f.size for f in files)
    if total > limits.max_package_bytes:
        raise LimitExceeded("max_package_bytes", limits.max_package_bytes, total)


async def uploaded_files(
    ctx: Context, workspace: str, files: Sequence[ManifestFile]
) -> dict[str, PackageFile]:
    """The files a client's manifest names, fetched back from the store and verified.

    The declared sizes must match the blobs; every blob must be visible to the workspace
    (`BlobsMissing` lists the ones that are not: upload them and send the manifest again).
    """
    _check_declared(files, ctx)
    now = ctx.clock.now()

    async def work(conn: AsyncConnection) -> dict[str, int]:
        digests = [f.digest for f in files]
        return await db_uploads.visible(conn, workspace, digests, now, held=True)

    sizes = await ctx.read(work)
    missing = sorted({f.digest for f in files} - sizes.keys())
    if missing:
        raise BlobsMissing(missing)
    for f in files:
        if sizes[f.digest] != f.size:
            raise ManifestInvalid(
                "size_mismatch", f"declared {f.size} bytes, the blob has {sizes[f.digest]}", f.path
            )
    data = await _fetch(ctx, [f.digest for f in files])
    return {f.path: PackageFile(data[f.digest], f.executable) for f in files}


async def publish_uploaded(
    ctx: Context, request: WriteRequest, files: Sequence[ManifestFile]
) -> Publication:
    """Publish a package whose blobs were uploaded beforehand (or are already referenced).

    The package is then written like any other, validated and content-checked.
    """
    package = await uploaded_files(ctx, request.scope.workspace, files)
    return await publish.write_package(ctx, request, package)
