"""`reg.uploads`: the two-phase upload, blobs first by digest, then a manifest.

For large packages, or to skip what the workspace already has: a client asks `size` for
each file's digest, `put`s the bytes the workspace lacks, then `publish`es a manifest that
names them all. The package is validated and content-checked on the stored bytes, exactly
like `Registry.write_package`.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry.domain.approvals import FindingRef
from registry.domain.model import ExpectedHead, Origin, PackageFile, Publication, Scope
from registry.services.context import Context
from registry.services.learning import pending
from registry.services.write import uploads
from registry.services.write.request import WriteRequest
from registry.services.write.uploads import ManifestFile, UploadedBlob


class Uploads:
    """The two-phase upload of one registry: `reg.uploads`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def put(
        self, workspace: str, digest: str, data: bytes, *, hold: bool = False
    ) -> UploadedBlob:
        """Store one file's bytes under its digest, ahead of the manifest that names it.

        The bytes are verified against `digest` (`BlobDigestMismatch`) and content-checked
        (`ContentBlocked`) before anything is stored; the blob is kept for `workspace` for
        `claim_ttl` seconds, and for good once a version references it. With `hold`, a blob
        with findings is stored instead of refused, but no read returns it until a publish
        that names it and approves its findings (`UploadedBlob.findings`) commits.
        """
        return await uploads.upload_blob(self.ctx, workspace, digest, data, hold=hold)

    async def size(self, workspace: str, digest: str) -> int:
        """The size of a blob the workspace uploaded or references (`BlobUnknown` otherwise)."""
        return await uploads.blob_size(self.ctx, workspace, digest)

    async def read(self, workspace: str, digest: str) -> bytes:
        """The verified bytes of a blob the workspace uploaded or references."""
        return await uploads.read_blob(self.ctx, workspace, digest)

    async def publish(
        self,
        scope: Scope,
        slug: str,
        files: Sequence[ManifestFile],
        *,
        expected_head: ExpectedHead,
        origin: Origin = Origin.EDIT,
        actor: str,
        sources: Sequence[str] = (),
        message: str = "",
        approve: Sequence[FindingRef] = (),
        keep_auto_improve: bool = False,
    ) -> Publication:
        """Publish a manifest whose blobs were uploaded with `put` beforehand.

        The package is validated and content-checked on the stored bytes, exactly like
        `write_package` (same options; `approve` names findings the writer approves, a held
        blob's included); `BlobsMissing` names the digests the workspace has not uploaded.
        """
        request = WriteRequest(
            scope=scope,
            slug=slug,
            expected_head=expected_head,
            origin=origin,
            actor=actor,
            message=message,
            sources=sources,
            approve=approve,
            keep_auto_improve=keep_auto_improve,
        )
        return await pending.publish_uploaded(self.ctx, request, files)

    async def files(self, workspace: str, files: Sequence[ManifestFile]) -> dict[str, PackageFile]:
        """The files a manifest of uploaded blobs names, fetched and verified.

        For writes that take files, such as a proposal's edited alternative.
        """
        return await uploads.uploaded_files(self.ctx, workspace, files)
