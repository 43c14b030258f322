"""Errors of the blob store seam. Backend-specific errors are translated into these."""

from __future__ import annotations


class BlobStoreError(Exception):
    """Base class of blob store errors."""


class InvalidDigest(BlobStoreError, ValueError):
    """A digest is not 64 lower-case hex characters; no path or key was built from it."""

    def __init__(self, digest: str) -> None:
        self.digest = digest
        super().__init__(f"invalid digest {digest}: expected 64 lower-case hex characters")


class DigestMismatch(BlobStoreError, ValueError):
    """The bytes given to `put` do not hash to the digest they were given under."""

    def __init__(self, expected: str, actual: str) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"digest mismatch: expected {expected}, the bytes hash to {actual}")


class BlobNotFound(BlobStoreError, KeyError):
    """No blob is stored under the digest."""

    def __init__(self, digest: str) -> None:
        self.digest = digest
        super().__init__(digest)

    def __str__(self) -> str:
        return f"blob {self.digest} not found"


class BlobCorrupted(BlobStoreError):
    """A stored blob no longer hashes to its digest (detected on read)."""

    def __init__(self, digest: str, actual: str) -> None:
        self.digest = digest
        self.actual = actual
        super().__init__(f"blob {digest} is corrupted: its bytes hash to {actual}")


class BlobStoreUnavailable(BlobStoreError):
    """The backend failed and retrying (where it was safe) did not help."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"blob store unavailable: {detail}")


class UnsupportedBlobURL(BlobStoreError, ValueError):
    """`open_blobstore` does not know the URL's scheme, or the URL is malformed."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"unsupported blob store URL {url!r}: {reason}")
